/**
 * What the editor's Run Prompt does without VS Code: the argument list it builds
 * (runPromptArgs), the stdout chunks runCli hands over as they arrive (what the Answers
 * output shows), and a real `run --prompt` of the bundled CLI on the demo model streamed that
 * way. Its code lens: server/test/code-lens.test.ts.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseRunStats, runPromptArgs } from '../../core/src/editor/cli-args';
import { runCli } from '../../core/src/editor/cli-process';
import { TINY_WORDS } from '../../core/src/demo/tiny-tokenizer';
import { REPO_ROOT } from '../../test/support/fixtures';
import { tempDirs } from '../../test/support/temp';

const tmp = tempDirs('ws-prompt-');
const cli = path.join(REPO_ROOT, 'dist', 'cli.js');

it('runPromptArgs: --chat with --system, or --prompt; max new tokens and images', () => {
  expect(runPromptArgs({ target: '/e', mode: 'chat', text: 'Hi there', system: 'Be brief', maxNewTokens: 16 })).toEqual([
    'run',
    '/e',
    '--chat',
    'Hi there',
    '--system',
    'Be brief',
    '--max-new-tokens',
    '16',
  ]);
  expect(runPromptArgs({ target: '/v', mode: 'prompt', text: 'x', system: 'ignored for a plain prompt', images: ['/a.png'] })).toEqual([
    'run',
    '/v',
    '--prompt',
    'x',
    '--image',
    '/a.png',
  ]);
});

it('runCli hands over stdout chunks as they arrive, before the process ends', async () => {
  const dir = tmp();
  const f = path.join(dir, 'cli.js');
  fs.writeFileSync(f, "process.stdout.write('The'); setTimeout(() => { process.stdout.write(' end\\n'); }, 300);");
  const seen: { chunk: string; at: number }[] = [];
  const t0 = Date.now();
  const r = await runCli({ node: process.execPath, cli: f }, [], {
    onChunk: (chunk, s) => s === 'stdout' && seen.push({ chunk, at: Date.now() }),
  });
  const end = Date.now();
  expect(seen.map((s) => s.chunk)).toEqual(['The', ' end\n']);
  expect(seen[0]!.at - t0).toBeLessThan(end - t0 - 200); // the first word came well before the exit
  expect(r.stdout).toBe('The end\n');
});

describe.runIf(fs.existsSync(cli))('the bundled CLI on the demo model, as Run Prompt starts it', () => {
  it('streams the answer text; a chat without a chat template is one error line naming the file', async () => {
    const out = tmp();
    const demo = spawnSync(process.execPath, [cli, 'demo', '--out', out, '--max-new-tokens', '1'], {
      encoding: 'utf8',
      env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off' },
    });
    expect(demo.status, demo.stderr).toBe(0);
    const target = path.join(out, 'tiny-llama-export');
    const chunks: string[] = [];
    const r = await runCli(
      { node: process.execPath, cli },
      runPromptArgs({ target, mode: 'prompt', text: 'the cat sat', maxNewTokens: 6 }),
      {
        onChunk: (c, s) => s === 'stdout' && chunks.push(c),
      },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(chunks.join('')).toBe(r.stdout);
    const words = r.stdout.trim().split(' ');
    for (const w of words) expect(TINY_WORDS).toContain(w);
    expect(parseRunStats(r.stderr)?.tokens).toBeGreaterThanOrEqual(words.length);
    const chat = await runCli({ node: process.execPath, cli }, runPromptArgs({ target, mode: 'chat', text: 'hello' }));
    expect(chat.code).toBe(1);
    expect(chat.errorLine).toBe(
      `weight-spec: ${path.join(out, 'tiny-llama', 'tokenizer_config.json')}: the model has no chat template (no "chat_template" here, no chat_template.jinja beside it); use --prompt`,
    );
  }, 60_000);
});
