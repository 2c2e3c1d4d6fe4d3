/**
 * Issue 15.1: `run` checks the same compile status `compile` uses. A re-export into the same
 * folder makes the compile stale: `run` refuses with one line naming what changed and the
 * command that fixes it, or recompiles first with --recompile. A re-export also drops the
 * prepared-directory link the previous export made when it names another one, and export links
 * the prepared folder only once it exists (issue 30.8).
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { describeFixtures, fixturesDir, REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-run-stale-');
const cli = (cwd: string, ...args: string[]) =>
  spawnSync(process.execPath, [path.join(REPO_ROOT, 'dist', 'cli.js'), ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off' },
  });

describeFixtures('run after a re-export', () => {
  it('refuses a stale compile with one line, recompiles with --recompile, and the tokens are the reference', () => {
    const dir = tmp();
    const llama = path.join(fixturesDir(), 'llama');
    const ref = JSON.parse(readFileSync(path.join(llama, 'reference.json'), 'utf8')) as { input_ids: number[]; generated_ids: number[] };
    const ids = ref.input_ids.join(',');
    const n = String(ref.generated_ids.length);
    for (const step of [
      ['export', '--config', llama, '--out', 'e'],
      ['prepare', '--checkpoint', llama, '--dtype', 'float32', '--out', 'p'],
      ['compile', 'e', '--prepared', 'p'],
    ]) {
      const r = cli(dir, ...step);
      expect(r.status, `${step.join(' ')}: ${r.stderr}`).toBe(0);
    }
    expect(cli(dir, 'run', 'e', '--input-ids', ids, '--max-new-tokens', n).stdout.trim()).toBe(ref.generated_ids.join(','));

    // Re-export with another cache length and skip the compile.
    expect(cli(dir, 'export', '--config', llama, '--out', 'e', '--ctx-len', '16').status).toBe(0);
    const stale = cli(dir, 'run', 'e', '--input-ids', ids, '--max-new-tokens', n);
    expect(stale.status).toBe(1);
    const lines = stale.stderr.split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^weight-spec: e: the compiled model is stale \((graph|spec)[a-z, ]* changed since the compile\); run `weight-spec compile e` first, or pass --recompile$/,
    );
    expect(stale.stdout).toBe('');

    // Ids are checked against the export's graph before a recompile they would fail after.
    const vocab = (JSON.parse(readFileSync(path.join(llama, 'config.json'), 'utf8')) as { vocab_size: number }).vocab_size;
    const badId = cli(dir, 'run', 'e', '--input-ids', `1,${vocab}`, '--max-new-tokens', n, '--recompile');
    expect(badId.status).toBe(1);
    expect(badId.stderr).toMatch(
      new RegExp(
        `^weight-spec: token id ${vocab} \\(position 1\\) is outside the vocabulary of .*/e/model\\.onnx: ids must be 0…${vocab - 1} \\(${vocab} tokens\\)\n$`,
      ),
    );
    expect(badId.stderr).not.toContain('recompiling');

    const again = cli(dir, 'run', 'e', '--input-ids', ids, '--max-new-tokens', n, '--recompile');
    expect(again.status, again.stderr).toBe(0);
    expect(again.stderr).toContain('recompiling first');
    expect(again.stdout.trim()).toBe(ref.generated_ids.join(','));
    // Now up to date: a plain run works without recompiling.
    const plain = cli(dir, 'run', 'e', '--input-ids', ids, '--max-new-tokens', n);
    expect(plain.status, plain.stderr).toBe(0);
    expect(plain.stderr).not.toContain('recompiling');
    // One token is "1 token"; zero tokens without --dump-logits is a usage error, not a silent exit 0.
    expect(cli(dir, 'run', 'e', '--input-ids', ids, '--max-new-tokens', '1').stderr).toMatch(/^run: 1 token; time to first token /m);
    const nothing = cli(dir, 'run', 'e', '--input-ids', `1,${vocab}`, '--max-new-tokens', '0');
    expect(nothing.status).toBe(2);
    expect(nothing.stderr).toMatch(/^weight-spec: run: --max-new-tokens 0 without --dump-logits leaves nothing to do\n/);
  });

  it('export links the prepared folder only once it exists; a re-export in another dtype replaces the link it made before', () => {
    const dir = tmp();
    // A copy of the fixture: prepare's default output lies beside the checkpoint (../shared is read-only).
    const llama = path.join(dir, 'llama');
    cpSync(path.join(fixturesDir(), 'llama'), llama, { recursive: true });
    const links = () => readdirSync(path.join(dir, 'e')).filter((f) => lstatSync(path.join(dir, 'e', f)).isSymbolicLink());
    // Issue 30.8: before prepare there is no folder, so no (dangling) link, as QEfficient's
    // link_prepared_checkpoint_dir (QEfficient/exporter/weight_free/export.py, commit 0bd37957).
    expect(cli(dir, 'export', '--config', llama, '--out', 'e').status).toBe(0);
    expect(links()).toEqual([]);
    // check finds the prepared shards through the export's report until the re-export links them.
    expect(cli(dir, 'prepare', '--checkpoint', llama, '--dtype', 'float32').status).toBe(0);
    const checked = cli(dir, 'check', 'e/weight_spec.json');
    expect(checked.status, checked.stdout + checked.stderr).toBe(0);
    expect(checked.stdout + checked.stderr).not.toMatch(/not prepared/);
    expect(cli(dir, 'export', '--config', llama, '--out', 'e').status).toBe(0);
    const first = links();
    expect(first).toHaveLength(1);
    expect(first[0]).toMatch(/-prepared-float32-/);
    expect(existsSync(path.join(dir, 'e', first[0]!))).toBe(true);
    // float16 is not prepared: the float32 link goes, and no float16 link dangles.
    expect(cli(dir, 'export', '--config', llama, '--out', 'e', '--dtype', 'float16').status).toBe(0);
    expect(links()).toEqual([]);
    expect(cli(dir, 'prepare', '--checkpoint', llama, '--dtype', 'float16').status).toBe(0);
    expect(cli(dir, 'export', '--config', llama, '--out', 'e', '--dtype', 'float16').status).toBe(0);
    const second = links();
    expect(second).toHaveLength(1);
    expect(second[0]).toMatch(/-prepared-float16-/);
    expect(second).not.toContain(first[0]);
  });
});
