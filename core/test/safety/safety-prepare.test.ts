/**
 * Issue #14, points 1 and 9: prepare deletes only what its manifest proves it wrote (names
 * and sizes), never a folder holding or held by the source, and two prepares into one
 * folder never both succeed (a lock beside the folder).
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { preparedStatus, runPrepare } from '../../src/prepare';
import { REPO_ROOT } from '../../../test/support/fixtures';
import { t, tempDir, workerPath, writeCheckpoint } from '../support/prepare-support';

const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');
beforeAll(() => {
  execFileSync(process.execPath, ['scripts/bundle.mjs'], { cwd: REPO_ROOT, stdio: 'inherit' });
});

async function tiny(dir: string): Promise<void> {
  await writeCheckpoint(dir, [[t('model.embed_tokens.weight', [16, 8], 1), t('model.norm.weight', [8], 2)]], { model_type: 'llama' });
}

const prep = (checkpoint: string, out: string, dtype: 'float16' | 'float32' | 'bfloat16' = 'float16') =>
  runPrepare({ checkpoint, dtype, out, workers: 0, workerPath: workerPath() });

describe('prepare --out ownership (#14.1)', () => {
  it('keeps a file the user put into a prepared folder: the re-run refuses with one line', async () => {
    const root = tempDir();
    const src = path.join(root, 'src');
    await tiny(src);
    const out = path.join(root, 'P');
    await prep(src, out, 'float16');
    fs.writeFileSync(path.join(out, 'my-notes.txt'), 'keep me');
    const err = await prep(src, out, 'float32').catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/P: refusing to replace it: my-notes\.txt is not listed in its \.checkpoint_prepared\.json/);
    expect((err as Error).message).not.toContain('\n');
    expect(fs.readFileSync(path.join(out, 'my-notes.txt'), 'utf8')).toBe('keep me');
    expect((await preparedStatus(out)).manifest?.target_dtype).toBe('float16');
  });

  it('refuses when a listed file was changed after prepare (its size differs from the manifest)', async () => {
    const root = tempDir();
    const src = path.join(root, 'src');
    await tiny(src);
    const out = path.join(root, 'P');
    await prep(src, out, 'float16');
    fs.appendFileSync(path.join(out, 'config.json'), ' ');
    await expect(prep(src, out, 'float32')).rejects.toThrow(/config\.json is \d+ bytes, the manifest says \d+/);
    expect(fs.existsSync(path.join(out, 'config.json'))).toBe(true);
    fs.writeFileSync(path.join(src, 'config.json'), fs.readFileSync(path.join(out, 'config.json')));
    const shard = fs.readdirSync(out).find((n) => n.endsWith('.safetensors'))!;
    fs.truncateSync(path.join(out, shard), 10);
    await expect(prep(src, out, 'float32')).rejects.toThrow(new RegExp(`${shard.replace('.', '\\.')} is 10 bytes`));
  });

  it('replaces a folder holding only its own files (another dtype)', async () => {
    const root = tempDir();
    const src = path.join(root, 'src');
    await tiny(src);
    const out = path.join(root, 'P');
    await prep(src, out, 'float16');
    const again = await prep(src, out, 'float32');
    expect(again.upToDate).toBe(false);
    expect((await preparedStatus(out)).manifest?.target_dtype).toBe('float32');
  });

  it('never deletes a source that lies inside the output folder, nor writes into the source', async () => {
    const root = tempDir();
    const src = path.join(root, 'src');
    await tiny(src);
    const out = path.join(root, 'P');
    await prep(src, out, 'float16');
    // The prepared folder gains a checkpoint of its own (P/inner), which is then prepared into P.
    const inner = path.join(out, 'inner');
    await tiny(inner);
    await expect(prep(inner, out, 'float32')).rejects.toThrow(/output directory contains the source checkpoint/);
    expect(fs.existsSync(path.join(inner, 'model.safetensors'))).toBe(true);
    await expect(prep(src, path.join(src, 'prepared'), 'float32')).rejects.toThrow(/lies inside the source checkpoint/);
    expect(fs.readdirSync(src).sort()).toEqual(['config.json', 'model.safetensors']);
  });
});

describe('prepare output lock (#14.9)', () => {
  it('a second prepare while one is writing the folder refuses with one line; the first completes', async () => {
    const root = tempDir();
    const src = path.join(root, 'src');
    // ~48 MB of bf16, converted to float32 by a real CLI process: long enough to overlap.
    await writeCheckpoint(
      src,
      [
        [
          t('model.embed_tokens.weight', [4096, 2048], 1),
          t('model.layers.0.mlp.up_proj.weight', [4096, 2048], 2),
          t('model.layers.0.mlp.down_proj.weight', [2048, 4096], 3),
        ],
      ],
      { model_type: 'llama' },
    );
    const out = path.join(root, 'P');
    const child = spawn(process.execPath, [CLI, 'prepare', '--checkpoint', src, '--dtype', 'float32', '--out', out], {
      env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off' },
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const deadline = Date.now() + 30_000;
    while (!fs.existsSync(`${out}.lock`) && child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
    expect(fs.existsSync(`${out}.lock`), 'the running prepare holds a lock beside its output folder').toBe(true);
    const err = await prep(src, out, 'float16').catch((e: Error) => e);
    expect(String((err as Error).message)).toMatch(
      /P: another prepare \(pid \d+\) is writing this folder; wait for it to finish or choose another --out$/,
    );
    expect(await exited, stderr).toBe(0);
    const status = await preparedStatus(out);
    expect(status.state).toBe('prepared');
    expect(status.manifest?.target_dtype).toBe('float32');
    expect(fs.existsSync(`${out}.lock`)).toBe(false);
  });

  it('a lock left by a dead process is taken over', async () => {
    const root = tempDir();
    const src = path.join(root, 'src');
    await tiny(src);
    const out = path.join(root, 'P');
    // A pid above the kernel's pid_max (4194304) never names a running process.
    fs.writeFileSync(`${out}.lock`, '4194305\n');
    const r = await prep(src, out, 'float16');
    expect(r.upToDate).toBe(false);
    expect(fs.existsSync(`${out}.lock`)).toBe(false);
  });
});
