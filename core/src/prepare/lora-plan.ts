/**
 * `prepare --lora <adapter> …`: the stacked adapter tensors a LoRA graph reads, in QEfficient's
 * finite-adapter layout (`QEfficient/peft/lora/layers.py` `LinearMultiLoRA.multilora_init` and
 * `auto.py` `_load_adapter_weights_to_model`, quic/efficient-transformers
 * ebf55e8159c8b87bff6d8028541b824244b16c81): for each targeted Linear `<module>`
 *
 *   `<module>.lora_a_weights` `[N+1, 1, in, R]`  slot k = adapter k's `lora_A.weight`ᵀ
 *   `<module>.lora_b_weights` `[N+1, 1, R, out]` slot k = adapter k's `lora_B.weight`ᵀ · scaling_k
 *
 * Slot 0 is the base model (zeros), adapters are numbered 1…N in the order given (QEfficient's
 * `active_adapter_to_id`). Where QEfficient requires one rank and one target list for all
 * adapters, here R is the largest r (a smaller rank is zero-padded, which leaves B·A unchanged)
 * and a module an adapter does not target gets a zero slot (it contributes nothing). The
 * scaling is folded into B here, in float32 before the one rounding to the prepared dtype, so
 * the graph has no per-adapter constants (QEfficient keeps `lora_scalings` beside the weights).
 *
 * All of it goes into one task writing {@link LORA_FILE}; its sources are the adapters' files,
 * named `lora<k>:<key>` in the task (two adapters store the same keys).
 */
import fs from 'node:fs';
import path from 'node:path';
import { FormatError, UsageError } from '../errors';
import { DTYPE_SIZE, type DType } from '../formats/dtype';
import { elementCount } from '../formats/safetensors';
import { readPeftAdapter, type PeftAdapter } from '../formats/peft-adapter';
import { realPathOf } from '../paths';
import { loraKeys } from '../artifacts/prepared-keys';
import { peakOfTensor } from './estimate';
import type { LoraStack, LoraStackModule, OutputTensor, SlicePlan, SourceTensor, Task } from './types';

/** The prepared file holding every stacked adapter tensor. */
export const LORA_FILE = 'lora-adapters.safetensors';

/**
 * Refuses an adapter whose `base_model_name_or_path` is a local path (absolute, `./…`, `../…`,
 * or a folder that exists beside the adapter) that is not the base folder. A Hub id is not
 * checked: the shapes are.
 */
function checkBaseModel(a: PeftAdapter, baseDir: string): void {
  const b = a.baseModel;
  if (b === undefined) return;
  const explicit = path.isAbsolute(b) || /^\.\.?([/\\]|$)/.test(b) || b.startsWith('~');
  const resolved = path.resolve(a.dir, b.startsWith('~') ? path.join(process.env.HOME ?? '~', b.slice(1)) : b);
  if (!explicit && !fs.existsSync(resolved)) return;
  const want = realPathOf(path.resolve(baseDir)).real;
  const got = realPathOf(resolved);
  if (!got.exists || got.real !== want)
    throw new FormatError(
      a.configFile,
      `base_model_name_or_path ${JSON.stringify(b)} is ${got.exists ? got.real : 'a path that does not exist'}, not the base model ${want}`,
    );
}

/**
 * Reads and checks the adapters against the base checkpoint's tensors (`sources`, its keys) and
 * plans the one task writing their stacked tensors in `target`.
 */
export async function planLora(
  dirs: readonly string[],
  base: { dir: string; sources: ReadonlyMap<string, SourceTensor> },
  target: DType,
): Promise<{ task: Task; stack: LoraStack; files: string[] }> {
  if (dirs.length === 0) throw new UsageError('prepare: --lora needs an adapter folder');
  const seen = new Set<string>();
  const adapters: PeftAdapter[] = [];
  for (const d of dirs) {
    const a = await readPeftAdapter(d);
    const real = realPathOf(a.dir).real;
    if (seen.has(real)) throw new UsageError(`--lora ${d}: the same adapter is given twice`);
    seen.add(real);
    checkBaseModel(a, base.dir);
    adapters.push(a);
  }
  const rank = Math.max(...adapters.map((a) => a.r));
  const byModule = new Map<string, LoraStackModule>();
  for (const a of adapters) {
    for (const m of a.modules) {
      const w = base.sources.get(`${m.module}.weight`);
      if (!w) throw new FormatError(a.weightsFile, `targets ${m.module}, but the base checkpoint ${base.dir} has no "${m.module}.weight"`);
      if (w.shape.length !== 2 || w.shape[0] !== m.out || w.shape[1] !== m.in)
        throw new FormatError(
          a.weightsFile,
          `${m.module}: the adapter is for a [${m.out}, ${m.in}] Linear, but "${m.module}.weight" is [${w.shape.join(', ')}] in the base checkpoint ${base.dir}`,
        );
      if (!byModule.has(m.module)) byModule.set(m.module, { module: m.module, in: m.in, out: m.out, by: a.weightsFile });
    }
  }
  const order = [...base.sources.keys()];
  const modules = [...byModule.values()].sort((x, y) => order.indexOf(`${x.module}.weight`) - order.indexOf(`${y.module}.weight`));
  const sources: Record<string, SourceTensor> = Object.create(null) as Record<string, SourceTensor>;
  const src = (k: number, key: string, a: PeftAdapter, t: { dtype: DType; shape: number[]; dataOffset: number; byteLength: number }) => {
    const name = `lora${k}:${key}`;
    sources[name] = { key, file: a.weightsFile, dtype: t.dtype, shape: t.shape, offset: t.dataOffset, byteLength: t.byteLength };
    return name;
  };
  const n = adapters.length + 1;
  const tensors: OutputTensor[] = [];
  for (const m of modules) {
    const slotsA: SlicePlan[] = [{ kind: 'lora', side: 'A', rank }];
    const slotsB: SlicePlan[] = [{ kind: 'lora', side: 'B', rank }];
    adapters.forEach((a, i) => {
      const mod = a.modules.find((x) => x.module === m.module);
      if (!mod) {
        slotsA.push({ kind: 'lora', side: 'A', rank });
        slotsB.push({ kind: 'lora', side: 'B', rank });
        return;
      }
      const prefix = `base_model.model.${m.module}`;
      slotsA.push({ kind: 'lora', side: 'A', rank, src: src(i + 1, `${prefix}.lora_A.weight`, a, mod.a) });
      slotsB.push({ kind: 'lora', side: 'B', rank, src: src(i + 1, `${prefix}.lora_B.weight`, a, mod.b), factor: a.scaling });
    });
    const keys = loraKeys(m.module);
    const stages = ['source', 'stacked', 'final'];
    tensors.push({ key: keys.a, dtype: target, shape: [n, 1, m.in, rank], stages, recipe: { kind: 'slots', slots: slotsA } });
    tensors.push({ key: keys.b, dtype: target, shape: [n, 1, rank, m.out], stages, recipe: { kind: 'slots', slots: slotsB } });
  }
  const byKey = new Map(tensors.map((t) => [t.key, t]));
  const stack: LoraStack = {
    adapters: adapters.map((a, i) => ({ id: i + 1, dir: a.dir, r: a.r, scaling: a.scaling })),
    rank,
    modules,
  };
  const task: Task = {
    id: 'lora:adapters',
    transform: 'lora-stack',
    params: { dtype: target, rank, adapters: stack.adapters.map((a) => ({ id: a.id, dir: a.dir, r: a.r, scaling: a.scaling })) },
    inputs: Object.keys(sources).map((key) => ({ key, stage: 'source' })),
    outputs: tensors.map((t) => ({ key: t.key, stage: 'final' })),
    sourceFiles: adapters.map((a) => a.weightsFile),
    file: LORA_FILE,
    peakBytes: Math.max(0, ...tensors.map((t) => peakOfTensor(t, sources, byKey))),
    outBytes: tensors.reduce((s, t) => s + elementCount(t.shape) * DTYPE_SIZE[t.dtype], 0),
    sources,
    tensors,
  };
  return { task, stack, files: adapters.flatMap((a) => [a.weightsFile, a.configFile]) };
}

/**
 * One slot of a stacked adapter tensor in float32: side A `[in, R]` = `lora_A`ᵀ (`[r, in]` stored),
 * side B `[R, out]` = `lora_B`ᵀ · factor (`[out, r]` stored); rows/columns past r, and a slot
 * without a source, are zero.
 */
export function loraSlot(
  values: Float32Array | undefined,
  side: 'A' | 'B',
  r: number,
  rank: number,
  other: number,
  factor = 1,
): Float32Array {
  const out = new Float32Array(other * rank);
  if (!values) return out;
  if (side === 'A') {
    // stored [r, in] → [in, R]
    for (let j = 0; j < r; j++) for (let i = 0; i < other; i++) out[i * rank + j] = values[j * other + i]!;
  } else {
    // stored [out, r] → [R, out], scaled
    for (let o = 0; o < other; o++) for (let j = 0; j < r; j++) out[j * other + o] = values[o * r + j]! * factor;
  }
  return out;
}
