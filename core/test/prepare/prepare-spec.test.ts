/**
 * `prepare --spec`: a spec written in QEfficient's weight-free PR-head naming is prepared
 * file for file and key for key. The naming is QEfficient's (quic/efficient-transformers
 * @ 277283b5, `QEfficient/base/checkpoint_transforms.py` and the exporter's stacking transform
 * `MoEExpertStackingCheckpointTransform` / `_LayerStacker.stack`): per layer
 * `<…>.experts.gate_proj` / `up_proj` `[E, H, I]` (each expert's `[I, H]` weight transposed) and
 * `<…>.experts.down_proj_t` `[E, I, H]` (each `[H, I]` transposed), in `model_NNNN` shards of a
 * `<name>-qeff-prepared-<dtype>` folder. Mixtral's module is `…mlp` there (QEfficient's key
 * lookup maps `.mlp.` ↔ `.block_sparse_moe.`). Expected tensors are stacked here from the
 * fixtures' safetensors, independently of prepare.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { Checkpoint } from '../../src/formats/safetensors';
import { MANIFEST_FILE, SENTINEL_FILE } from '../../src/prepare';
import { cliInProcess } from '../../../test/support/cli';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { concat, sameBytes, tempDir, transposeExperts, workerPath } from '../support/prepare-support';

const EXPERT = /^(.*)\.experts\.(\d+)\.(w1|w3|w2|gate_proj|up_proj|down_proj)\.weight$/;
const QEFF_NAME: Record<string, string> = {
  w1: 'gate_proj',
  gate_proj: 'gate_proj',
  w3: 'up_proj',
  up_proj: 'up_proj',
  w2: 'down_proj_t',
  down_proj: 'down_proj_t',
};

/** bf16 bytes → f32 bytes (exact: bf16 is the top half of f32); f32 stays as it is. */
function widen(b: Uint8Array, dtype = 'BF16'): Uint8Array {
  if (dtype === 'F32') return b;
  expect(dtype).toBe('BF16');
  const h = new Uint16Array(b.slice().buffer);
  return new Uint8Array(new Uint32Array([...h].map((x) => (x << 16) >>> 0)).buffer);
}

interface Expected {
  /** spec key → how to compute it from the source: a dense key, or stacked expert keys. */
  dense: Map<string, string>;
  stacked: Map<string, string[]>;
}

/** The keys QEfficient's PR head gives the checkpoint's tensors. */
function qeffKeys(ck: Checkpoint): Expected {
  const dense = new Map<string, string>();
  const stacked = new Map<string, string[]>();
  for (const t of ck.tensors()) {
    const m = EXPERT.exec(t.key);
    if (!m) {
      dense.set(t.key, t.key);
      continue;
    }
    const key = `${m[1]!.replace('.block_sparse_moe', '.mlp')}.experts.${QEFF_NAME[m[3]!]}`;
    const list = stacked.get(key) ?? [];
    list[Number(m[2])] = t.key;
    stacked.set(key, list);
  }
  return { dense, stacked };
}

/** Writes a v5 spec beside `<exportDir>/<name>-qeff-prepared-float32`: dense keys in model_0000, experts in model_0001. */
function writeQeffSpec(exportDir: string, name: string, keys: string[], experts: Set<string>): string {
  const folder = `${name}-qeff-prepared-float32`;
  const spec = {
    files: [0, 1].map((i) => ({ format: 'safetensors', path: `${folder}/model_000${i}.safetensors` })),
    inputs: keys.map((key) => ({ location: { file: experts.has(key) ? 1 : 0, key }, name: key })),
    model_id: path.join(exportDir, folder),
    model_name: name,
    version: 5,
  };
  const file = path.join(exportDir, 'weight_spec.json');
  fs.writeFileSync(file, JSON.stringify(spec, null, 2) + '\n');
  return file;
}

/** The error-severity problems of `check --json` (a JSON array of problems). */
function errorsOf(stdout: string): string[] {
  const problems = JSON.parse(stdout) as { severity: string; message: string }[];
  expect(Array.isArray(problems)).toBe(true);
  return problems.filter((p) => p.severity === 'error').map((p) => p.message);
}

const env = () => ({ WEIGHT_SPEC_PREPARE_WORKER: workerPath() });

for (const family of ['mixtral', 'glm4_moe']) {
  describeFixtures(`prepare --spec: ${family} in QEfficient's PR-head naming`, () => {
    it('writes exactly the spec’s files and keys, equal to an independent stacking, and check reports 0 errors', async () => {
      const src = path.join(fixturesDir(), family);
      const ck = await Checkpoint.open(src);
      const want = qeffKeys(ck);
      expect(want.stacked.size).toBeGreaterThan(0);
      const exportDir = tempDir();
      const keys = [...want.dense.keys(), ...want.stacked.keys()];
      const spec = writeQeffSpec(exportDir, family, keys, new Set(want.stacked.keys()));

      const run = await cliInProcess(['prepare', '--checkpoint', src, '--dtype', 'float32', '--spec', spec], { env: env() });
      expect(run.code, run.stderr).toBe(0);
      const out = path.join(exportDir, `${family}-qeff-prepared-float32`);
      expect(run.stdout.trim().split('\n').at(-1)).toBe(out);
      const shards = fs.readdirSync(out).filter((f) => f.endsWith('.safetensors'));
      expect(shards.sort()).toEqual(['model_0000.safetensors', 'model_0001.safetensors']);

      const prepared = await Checkpoint.open(out);
      const byFile = (f: string) => new Set([...prepared.tensors()].filter((t) => path.basename(t.file) === f).map((t) => t.key));
      expect(byFile('model_0000.safetensors')).toEqual(new Set(want.dense.keys()));
      expect(byFile('model_0001.safetensors')).toEqual(new Set(want.stacked.keys()));
      for (const [key, from] of want.dense) {
        expect(prepared.get(key)!.dtype).toBe('F32');
        expect(sameBytes(await prepared.read(key), widen(await ck.read(from), ck.get(from)!.dtype)), key).toBe(true);
      }
      for (const [key, from] of want.stacked) {
        const [rows, cols] = ck.get(from[0]!)!.shape as [number, number];
        const E = from.length;
        const expected = transposeExperts(concat(await Promise.all(from.map(async (k) => widen(await ck.read(k))))), E, rows, cols, 4);
        // gate/up [E, H, I], down_proj_t [E, I, H]: each expert's [out, in] transposed
        expect(prepared.get(key)!.shape, key).toEqual([E, cols, rows]);
        expect(sameBytes(await prepared.read(key), expected), key).toBe(true);
      }

      const check = await cliInProcess(['check', spec, '--json']);
      expect(errorsOf(check.stdout)).toEqual([]);
      expect(check.code).toBe(0);

      // QEfficient's own prepared folder: sentinel only, no manifest of ours — check accepts it as it is
      fs.rmSync(path.join(out, MANIFEST_FILE));
      fs.writeFileSync(path.join(out, SENTINEL_FILE), '');
      const qeff = await cliInProcess(['check', spec, '--json']);
      expect(errorsOf(qeff.stdout)).toEqual([]);
      expect(qeff.code).toBe(0);
    });
  });
}

describeFixtures('prepare --spec: refusals', () => {
  it('refuses a key no tensor derives, naming the input', async () => {
    const src = path.join(fixturesDir(), 'mixtral');
    const exportDir = tempDir();
    const spec = writeQeffSpec(
      exportDir,
      'mixtral',
      ['model.embed_tokens.weight', 'model.layers.0.mlp.experts.gate_up_proj'],
      new Set(['model.layers.0.mlp.experts.gate_up_proj']),
    );
    const run = await cliInProcess(['prepare', '--checkpoint', src, '--dtype', 'float32', '--spec', spec], { env: env() });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('inputs[1] (model.layers.0.mlp.experts.gate_up_proj)');
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(fs.existsSync(path.join(exportDir, 'mixtral-qeff-prepared-float32'))).toBe(false);
  });
});
