/**
 * The README's first command: `weight-spec demo` makes its own tiny model and runs export →
 * prepare → compile → check → run. This keeps that promise true, and the story it tells
 * (issue 15.10): random weights, what to try next, and no temp files left behind.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { cliInvocation } from '../../src/cli/invocation';
import { TINY_WORDS } from '../../src/demo/tiny-tokenizer';
import { REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-demo-');
const cli = (...args: string[]) =>
  spawnSync(process.execPath, [path.join(REPO_ROOT, 'dist', 'cli.js'), ...args], {
    encoding: 'utf8',
    cwd: REPO_ROOT,
    env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off' },
  });

it('weight-spec demo runs the whole pipeline on the tiny model it makes', () => {
  const out = tmp();
  const r = cli('demo', '--out', out, '--max-new-tokens', '4');
  expect(r.status, r.stderr).toBe(0);
  // The run step prints the generated ids on their own line: four ids in the tiny vocab.
  const ids = r.stdout.split('\n').find((l) => /^\d+(,\d+){3}$/.test(l));
  expect(ids, r.stdout).toBeDefined();
  for (const id of ids!.split(',').map(Number)) expect(id).toBeLessThan(128);
  // It ends with text in, text out (issue 51): the tiny tokenizer's words after the `run --prompt` step,
  // its ids on stderr, and that step printed so it can be pasted into a shell.
  const lines = r.stdout.split('\n');
  const promptAt = lines.findIndex((l) => l.includes(' run ') && l.includes('--prompt "the cat sat on the mat"'));
  expect(promptAt, r.stdout).toBeGreaterThan(0);
  const words = lines[promptAt + 1]!.split(' ');
  expect(words.length).toBeGreaterThan(0);
  for (const w of words) expect(TINY_WORDS).toContain(w);
  const generated = /^run: ids ([\d,]+)$/m.exec(r.stderr)?.[1]?.split(',').map(Number);
  expect(generated?.filter((t) => t > 2).map((t) => TINY_WORDS[t - 3])).toEqual(words);
  expect(readFileSync(path.join(out, 'tiny-llama', 'tokenizer.json'), 'utf8')).toContain('"WordLevel"');
  const spec = JSON.parse(readFileSync(path.join(out, 'tiny-llama-export', 'weight_spec.json'), 'utf8'));
  expect(spec.version).toBe(5);
  expect(existsSync(path.join(out, 'tiny-llama-export', 'compile.json'))).toBe(true);
  expect(r.stdout).toContain('weight_spec.json: ok');
  // The story: random weights, files kept where the user said, what to try next.
  expect(r.stdout).toMatch(/random .*tokens are arbitrary/);
  expect(r.stdout).toContain(`every file is in ${out}`);
  expect(r.stdout).not.toContain('rm -rf');
  // Started as `node dist/cli.js` (as `npm run demo` does), it prints that form, which runs where
  // `npm ci` left the user (no `weight-spec` on PATH), and says how to install the command (issue 36).
  for (const next of ['node dist/cli.js export --config <model dir>', 'node dist/cli.js inspect', 'node dist/cli.js check', 'VS Code'])
    expect(r.stdout).toContain(next);
  expect(r.stdout).not.toMatch(/^\$ weight-spec /m);
  expect(r.stdout).toMatch(/install the command: npm link .* or npm i -g \./);
  const checkLine = r.stdout.split('\n').find((l) => l.startsWith('$ node dist/cli.js check '));
  expect(checkLine, r.stdout).toBeDefined();
  const again0 = spawnSync('sh', ['-c', checkLine!.slice(2)], { cwd: REPO_ROOT, encoding: 'utf8' });
  expect(again0.status, again0.stderr).toBe(0);
  expect(again0.stdout).toContain('weight_spec.json: ok');

  // Export's `next:` no longer suggests prepare once the checkpoint is prepared.
  const again = cli('export', '--config', path.join(out, 'tiny-llama'), '--out', path.join(out, 'again'));
  expect(again.status, again.stderr).toBe(0);
  const next = again.stdout.slice(again.stdout.indexOf('next:'));
  expect(next).not.toContain('weight-spec prepare');
  expect(next).toContain('weight-spec compile');
});

it('by default the demo removes the temp directory it made; --keep keeps it and says how to remove it', () => {
  const r = cli('demo', '--max-new-tokens', '1');
  expect(r.status, r.stderr).toBe(0);
  const removed = /removed its temp files \((.+?)\)/.exec(r.stdout)?.[1];
  expect(removed, r.stdout).toBeDefined();
  expect(existsSync(removed!)).toBe(false);

  const k = cli('demo', '--keep', '--max-new-tokens', '1');
  expect(k.status, k.stderr).toBe(0);
  const kept = /remove them with: rm -rf (.+)/.exec(k.stdout)?.[1];
  expect(kept, k.stdout).toBeDefined();
  expect(existsSync(path.join(kept!, 'tiny-llama-export', 'weight_spec.json'))).toBe(true);
  rmSync(kept!, { recursive: true, force: true });
});

it('cliInvocation: `weight-spec` when started through the installed command, else node + the script relative to the working folder', () => {
  expect(cliInvocation('/repo', '/usr/local/bin/weight-spec')).toBe('weight-spec');
  expect(cliInvocation('/repo', '/repo/dist/cli.js')).toBe('node dist/cli.js');
  expect(cliInvocation('/elsewhere/x', '/repo/dist/cli.js')).toBe('node /repo/dist/cli.js');
  expect(cliInvocation('/a', '/my repo/dist/cli.js')).toBe('node "/my repo/dist/cli.js"');
});
