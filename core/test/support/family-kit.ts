/**
 * The family test kit: what every family's own test shares. Given a {@link FamilyTest} (the
 * registry row, its random checkpoint and its float64 reference forward written from HF's
 * modeling file, in `core/test/support/families/<name>.ts`), {@link familyKit} registers, for
 * every config of the row's `test.configs`:
 * - the random BF16 checkpoint with HF's key names, written as a real model folder;
 * - `export --config` of it (real files, KV cache of {@link KIT_CTX});
 * - the spec's inputs against the checkpoint: every graph weight input is named in
 *   weight_spec.json, maps to a checkpoint key, and every key is used; `model_name` is the
 *   config's `architectures[0]`, else the row's `hfClass`;
 * - the written model.onnx on ONNX Runtime, fed the weights weight_spec.json names: a prefill
 *   of {@link KIT_PREFILL} tokens, then one token per decode step through the KV cache, each
 *   logits row ≤ 1e-4 from the reference;
 * - ONNX's own checker (python3-onnx) on every exported graph.
 * The family's test file calls `familyKit(familyTest)` and adds only what is special to it
 * (defaults that matter, refusals), with {@link exportRandom} and {@link runExported}. The kit
 * feeds the checkpoint's own tensors by the spec's keys, so it fits families whose spec names
 * HF's keys (dense ones); a MoE family's spec names prepared (stacked) expert tensors.
 *
 * A row's `test.configs` also enrols the family in the generic suites, with no further edit:
 * f32 and f16 parity token by token (graph-families.test.ts), four graph variants (plain,
 * continuous batching, decode, prefill f16) checked and loaded by ONNX Runtime
 * (graph-structure.test.ts), ONNX's checker over every family's export (onnx-checker.test.ts)
 * and the registry's own checks (family-registry.test.ts); those find the checkpoint and the
 * reference through the same `families/<name>.ts` (family-tests.ts). Config names are global
 * across rows (they are the keys of SYNTHETIC_CONFIGS): `familyTestConfigs` refuses a name used
 * twice (family-registry.test.ts).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { describeOnnxChecker, expectOnnxValid } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';
import { archFromConfig } from '../../src/export/families/arch-from-config';
import type { TestConfig } from '../../src/export/families/row';
import { exportFromConfig } from '../../src/export/export-config';
import { planLayout } from '../../src/export/exporter/plan-layout';
import { parseSpecText } from '../../src/spec';
import type { FamilyTest, Weights } from './family-tests';
import { writeModel } from './graph-random';
import { maxAbsDiff } from './graph-support';

/** The KV cache length of the kit's exports. */
export const KIT_CTX = 16;
/** The token ids run (taken modulo the config's vocab). */
export const KIT_IDS = [5, 17, 3, 78, 41, 9, 60, 2, 33, 71];
/** Tokens of the prefill; the rest are decoded one at a time. */
export const KIT_PREFILL = 7;
const SEED = 11;

/** One exported random model. */
export interface KitExport {
  /** The model folder (config.json + model.safetensors). */
  dir: string;
  /** Its weights (float32, bf16-rounded), by HF key. */
  raw: Weights;
  onnx: string;
  spec: NonNullable<ReturnType<typeof parseSpecText>['spec']>;
}

const tmp = tempDirs('ws-family-kit-');

/** A random model folder of `cfg` (the family's checkpoint maker) exported with `export --config`. */
export async function exportRandom(t: FamilyTest, name: string, cfg: TestConfig): Promise<KitExport> {
  const root = tmp();
  const dir = path.join(root, name);
  const raw = await writeModel(dir, cfg, t.random(cfg, SEED));
  const out = path.join(root, `${name}-out`);
  await exportFromConfig({ config: dir, out, ctxLen: KIT_CTX, planner: planLayout });
  const parsed = parseSpecText(readFileSync(path.join(out, 'weight_spec.json'), 'utf8'), 'weight_spec.json');
  expect(parsed.problems.filter((p) => p.severity === 'error')).toEqual([]);
  return { dir, raw, onnx: path.join(out, 'model.onnx'), spec: parsed.spec! };
}

/** The ids the kit runs for `cfg` (each below its vocab). */
export function kitIds(cfg: TestConfig): number[] {
  const vocab = cfg.vocab_size as number;
  return KIT_IDS.map((i) => i % vocab);
}

/**
 * Runs the export on ONNX Runtime: prefill of the first {@link KIT_PREFILL} ids, then one decode
 * step per remaining id; the logits rows of positions KIT_PREFILL-1 … end.
 */
export async function runExported(e: KitExport, cfg: TestConfig, ids = kitIds(cfg)): Promise<number[][]> {
  const a = archFromConfig(cfg, 'config.json');
  const session = await ort.InferenceSession.create(readFileSync(e.onnx));
  const weights: Record<string, ort.Tensor> = {};
  // feed each graph weight input from the checkpoint key weight_spec.json names for it
  for (const i of e.spec.inputs) {
    const t = e.raw.get(i.location.key);
    if (!t) throw new Error(`checkpoint lacks ${i.location.key}`);
    weights[i.name] = new ort.Tensor('float32', t.data, t.shape);
  }
  const layers = a.layers.length;
  const names = Array.from({ length: layers }, (_, l) => [`past_key.${l}`, `past_value.${l}`]).flat();
  let cache: ort.Tensor[] = names.map(
    () => new ort.Tensor('float32', new Float32Array(a.nKv * KIT_CTX * a.headDim), [1, a.nKv, KIT_CTX, a.headDim]),
  );
  const step = async (chunk: number[], start: number) => {
    const feeds: Record<string, ort.Tensor> = { ...weights };
    feeds.input_ids = new ort.Tensor('int64', BigInt64Array.from(chunk.map(BigInt)), [1, chunk.length]);
    feeds.position_ids = new ort.Tensor('int64', BigInt64Array.from(chunk.map((_, i) => BigInt(start + i))), [1, chunk.length]);
    names.forEach((n, k) => (feeds[n] = cache[k]!));
    const r = await session.run(feeds);
    cache = names.map((n) => r[`${n}_RetainedState`]!);
    const lg = r.logits!;
    const V = lg.dims.at(-1)!;
    return Array.from((lg.data as Float32Array).subarray(lg.data.length - V));
  };
  const rows = [await step(ids.slice(0, KIT_PREFILL), 0)];
  for (let t = KIT_PREFILL; t < ids.length; t++) rows.push(await step([ids[t]!], t));
  return rows;
}

/** The graph's weight inputs are the spec's, and the spec's keys are exactly the checkpoint's. */
async function expectSpecMatchesCheckpoint(e: KitExport): Promise<void> {
  const session = await ort.InferenceSession.create(readFileSync(e.onnx));
  const state = /^(input_ids|position_ids|past_key\.\d+|past_value\.\d+)$/;
  expect(e.spec.inputs.map((i) => i.name).sort()).toEqual(session.inputNames.filter((n) => !state.test(n)).sort());
  expect(e.spec.inputs.map((i) => i.location.key).sort()).toEqual([...e.raw.keys()].sort());
}

/** Options of {@link familyKit}. */
export interface FamilyKitOptions {
  /** Checks special to the family on each config's export (keys it must or must not have …). */
  extra?: (e: KitExport, cfg: TestConfig, name: string) => void;
}

/** Registers the shared tests of a family (see the file's TSDoc) over its row's `test.configs`. */
export function familyKit(t: FamilyTest, opts: FamilyKitOptions = {}): void {
  const row = t.row;
  const configs = Object.entries(row.test.configs ?? {});
  describe(`${row.modelType}: export --config, ONNX Runtime vs the float64 reference (family kit)`, () => {
    it('the row has test configs', () => expect(configs.length).toBeGreaterThan(0));
    for (const [name, cfg] of configs) {
      it(`${name}: prefill + KV decode logits ≤ 1e-4; weight_spec.json inputs are exactly the checkpoint's HF keys`, async () => {
        const e = await exportRandom(t, name, cfg);
        await expectSpecMatchesCheckpoint(e);
        const arch = (cfg.architectures as string[] | undefined)?.[0];
        expect(e.spec.model_name).toBe(arch ?? row.hfClass);
        opts.extra?.(e, cfg, name);
        const ids = kitIds(cfg);
        const got = await runExported(e, cfg, ids);
        const ref = t.reference(cfg, e.raw, ids);
        expect(got.length).toBe(ids.length - KIT_PREFILL + 1);
        expect(maxAbsDiff(got, ref.slice(KIT_PREFILL - 1))).toBeLessThanOrEqual(1e-4);
      });
    }
  });
  describeOnnxChecker(`${row.modelType}: ONNX checker (python3-onnx, strict shape inference)`, () => {
    it('the exported model.onnx of every test config passes', async () => {
      const files: string[] = [];
      for (const [name, cfg] of configs) files.push((await exportRandom(t, `${name}-check`, cfg)).onnx);
      expectOnnxValid(files);
    });
  });
}
