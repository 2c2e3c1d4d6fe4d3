/**
 * `.bin` checkpoints in prepare: QEfficient converts `pytorch_model*.bin` when a model has no
 * safetensors; prepare does it with the project's safe converter (allow-listed unpickler) and
 * says so. The llama fixture's tensors are written here as a torch.save-style zip (test-side
 * pickler, independent of core) in two shards; the prepared tensors must equal a prepare of
 * the fixture's own safetensors, byte for byte.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { describeFixtures, fixturesDir, REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { Checkpoint } from '../../src/formats/safetensors';
import { buildTorchBin, stateDictPickle, type TensorDesc } from '../support/pickle-build';

const tmp = tempDirs('ws-prep-bin-');
const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');

function run(...args: string[]) {
  return spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off' } });
}

const STORAGE: Record<string, string> = { BF16: 'BFloat16Storage', F32: 'FloatStorage', F16: 'HalfStorage' };

/** Writes the fixture's tensors as `pytorch_model-0000i-of-00002.bin` shards (+ index, config) in `dir`. */
async function binCheckpoint(fx: string, dir: string, storageType?: string): Promise<void> {
  fs.mkdirSync(dir, { recursive: true });
  fs.copyFileSync(path.join(fx, 'config.json'), path.join(dir, 'config.json'));
  const ck = await Checkpoint.open(fx);
  const keys = ck.keys();
  const halves = [keys.slice(0, Math.ceil(keys.length / 2)), keys.slice(Math.ceil(keys.length / 2))];
  const weightMap: Record<string, string> = {};
  for (const [i, part] of halves.entries()) {
    const name = `pytorch_model-0000${i + 1}-of-00002.bin`;
    const descs: TensorDesc[] = [];
    const storages: Record<string, Uint8Array> = {};
    for (const [j, key] of part.entries()) {
      const t = ck.get(key)!;
      const n = t.shape.reduce((a, b) => a * b, 1);
      const stride = t.shape.map((_, d) => t.shape.slice(d + 1).reduce((a, b) => a * b, 1));
      descs.push({
        key,
        storageKey: String(j),
        storageType: storageType ?? STORAGE[t.dtype]!,
        storageNumel: n,
        offset: 0,
        shape: t.shape,
        stride,
        parameter: j % 2 === 0,
      });
      storages[String(j)] = await ck.read(key);
      weightMap[key] = name;
    }
    fs.writeFileSync(path.join(dir, name), buildTorchBin(stateDictPickle(descs, 2), storages, { prefix: name.replace(/\.bin$/, '') }));
  }
  fs.writeFileSync(path.join(dir, 'pytorch_model.bin.index.json'), JSON.stringify({ metadata: {}, weight_map: weightMap }));
}

describeFixtures('prepare on a .bin checkpoint', () => {
  it('converts with the safe converter, says so, reuses the conversion, and prepares what the safetensors twin prepares', async () => {
    const root = tmp();
    const fx = path.join(fixturesDir(), 'llama');
    const bin = path.join(root, 'llama-bin');
    await binCheckpoint(fx, bin);
    const first = run('prepare', '--checkpoint', bin, '--dtype', 'float16');
    expect(first.status, first.stderr).toBe(0);
    const conv = path.join(root, 'llama-bin-safetensors');
    expect(first.stdout).toContain(`prepare: ${bin} has no safetensors: converted 2 .bin file(s) (`);
    expect(first.stdout).toContain(`to ${conv} (allow-listed unpickler, no code run)`);
    const dir = first.stdout.trim().split('\n').pop()!;
    const twin = path.join(root, 'twin');
    const ref = run('prepare', '--checkpoint', fx, '--dtype', 'float16', '--out', twin);
    expect(ref.status, ref.stderr).toBe(0);
    const a = await Checkpoint.open(dir);
    const b = await Checkpoint.open(twin);
    expect(a.keys().sort()).toEqual(b.keys().sort());
    for (const k of b.keys()) {
      expect(a.get(k)!.dtype).toBe('F16');
      expect(Buffer.from(await a.read(k)).equals(Buffer.from(await b.read(k))), k).toBe(true);
    }
    // unchanged .bin files: the conversion is reused and the prepared directory is up to date
    const again = run('prepare', '--checkpoint', bin, '--dtype', 'float16');
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout).toContain('reused the conversion of 2 .bin file(s)');
    expect(again.stdout).toMatch(/prepare: up to date/);
  }, 120_000);

  it('a .bin the allow-list refuses: one line naming the file, exit 1, nothing prepared', async () => {
    const root = tmp();
    const bin = path.join(root, 'bad-bin');
    await binCheckpoint(path.join(fixturesDir(), 'llama'), bin, 'ComplexFloatStorage');
    const r = run('prepare', '--checkpoint', bin, '--dtype', 'float16');
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^weight-spec: .*pytorch_model-00001-of-00002\.bin: .*ComplexFloatStorage/);
    expect(fs.readdirSync(root).filter((n) => n.includes('prepared'))).toEqual([]);
  });
});
