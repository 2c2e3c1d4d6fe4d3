/**
 * Maps ONNX initializers to checkpoint tensors: QEfficient's name strategies first, each
 * verified by content, then a content search (multiset digest, then exact comparison in
 * either orientation) for initializers that names cannot place — `onnx::MatMul_N` copies
 * of `W.T`, `onnx::Mul_N` norm weights.
 */
import { isFloat, type DType } from '../formats/dtype';
import { affineRelation, comparable, multisetDigest, numel, sameValues, sameValuesTransposed, type TensorSource } from './content';
import { isAllowedUnresolved, proposeByName, type Strategy } from './name-strategies';
import { sliceCandidates, type SliceOf } from './slices';

export { isAllowedUnresolved, proposeByName, baseModelPrefix, ALLOWED_UNRESOLVED } from './name-strategies';
export type { Strategy } from './name-strategies';
export type { SliceOf } from './slices';
export { affineRelation, multisetDigest, sameValues, sameValuesTransposed, numel, type Affine, type TensorSource } from './content';

/** An ONNX initializer whose bytes can be read from a file. */
export interface InitializerInput extends TensorSource {
  name: string;
}

/** A checkpoint tensor. */
export interface KeyTensor extends TensorSource {
  key: string;
}

/** The outcome for one initializer. */
export interface Resolution {
  name: string;
  dtype: DType;
  shape: number[];
  key?: string;
  strategy?: Strategy;
  /** The initializer holds the transpose of the checkpoint tensor (2-D only). */
  transposed: boolean;
  /**
   * The initializer equals this part of the checkpoint tensor (one expert, a block of rows of a
   * fused weight), in the orientation `transposed` says (legacy exports that unrolled an expert loop).
   */
  slice?: SliceOf;
  /** The initializer is the checkpoint tensor plus (or times) a constant folded in by the export. */
  affine?: { add?: number; mul?: number };
  /** Why it stayed unresolved, or what was odd about the match. */
  note?: string;
}

/** Options of {@link resolveInitializers}. */
export interface ResolveOptions {
  /** The checkpoint's config.json (for base_model_prefix and tied embeddings). */
  config?: Record<string, unknown>;
  /** Memory for one streaming read (default 4 MiB). */
  chunkBytes?: number;
  /** Initializers with fewer elements are constants, never searched by content (default 2). */
  minContentElements?: number;
  /** Called after each initializer is decided. */
  onProgress?: (done: number, total: number) => void;
}

/** Checks `init` against `key` in both orientations; the orientation that holds, if any. */
async function verify(init: InitializerInput, t: KeyTensor, chunk: number): Promise<'natural' | 'transposed' | undefined> {
  if (!comparable(init.dtype, t.dtype) || numel(init.shape) !== numel(t.shape)) return undefined;
  const sameShape = init.shape.length === t.shape.length && init.shape.every((d, i) => d === t.shape[i]);
  // A 1-D checkpoint tensor may be stored with a leading unit axis, so equal element
  // count in the same order counts as natural whenever neither is a reversed 2-D pair.
  const reversed2d = init.shape.length === 2 && t.shape.length === 2 && init.shape[0] === t.shape[1] && init.shape[1] === t.shape[0];
  if ((sameShape || !reversed2d) && (await sameValues(init, t, chunk))) return 'natural';
  if (reversed2d && (await sameValuesTransposed(init, t, chunk))) return 'transposed';
  return undefined;
}

/**
 * Resolves every initializer. Name proposals are tried first, in QEfficient's order, and
 * accepted only when the content agrees; what remains is searched by content among
 * checkpoint tensors of equal element count. Keys not yet used by another initializer are
 * preferred when several tensors hold the same values.
 */
export async function resolveInitializers(
  inits: readonly InitializerInput[],
  tensors: readonly KeyTensor[],
  opts: ResolveOptions = {},
): Promise<Resolution[]> {
  const chunk = opts.chunkBytes ?? 4 << 20;
  const minEl = opts.minContentElements ?? 2;
  const byKey = new Map(tensors.map((t) => [t.key, t]));
  const used = new Set<string>();
  const results: Resolution[] = [];
  const pending: { init: InitializerInput; res: Resolution }[] = [];
  let done = 0;

  for (const init of inits) {
    const res: Resolution = { name: init.name, dtype: init.dtype, shape: init.shape, transposed: false };
    results.push(res);
    const mismatched: string[] = [];
    for (const p of proposeByName(init.name, (k) => byKey.has(k), opts.config)) {
      const how = await verify(init, byKey.get(p.key)!, chunk);
      if (how) {
        Object.assign(res, { key: p.key, strategy: p.strategy, transposed: how === 'transposed' });
        used.add(p.key);
        break;
      }
      mismatched.push(p.key);
    }
    if (mismatched.length && !res.key) res.note = `name matches ${mismatched.join(', ')} but the values differ`;
    if (res.key) opts.onProgress?.(++done, inits.length);
    else pending.push({ init, res });
  }

  // Content search: digest only checkpoint tensors whose element count some pending
  // initializer has, so a large checkpoint costs reads only where a match is possible.
  const wanted = new Set(
    pending.filter(({ init }) => isFloat(init.dtype) && numel(init.shape) >= minEl).map(({ init }) => numel(init.shape)),
  );
  const digests = new Map<string, KeyTensor[]>();
  for (const t of tensors) {
    if (!isFloat(t.dtype) || !wanted.has(numel(t.shape))) continue;
    const d = await multisetDigest(t, chunk);
    digests.set(d, [...(digests.get(d) ?? []), t]);
  }
  const searchable = (init: InitializerInput) => isFloat(init.dtype) && numel(init.shape) >= minEl;
  for (const { init, res } of pending) {
    if (searchable(init)) {
      const candidates = digests.get(await multisetDigest(init, chunk)) ?? [];
      const ordered = [...candidates.filter((t) => !used.has(t.key)), ...candidates.filter((t) => used.has(t.key))];
      for (const t of ordered) {
        const how = await verify(init, t, chunk);
        if (!how) continue;
        Object.assign(res, {
          key: t.key,
          strategy: how === 'transposed' ? 'content-transposed' : 'content',
          transposed: how === 'transposed',
        });
        if (candidates.length > 1) res.note = `${candidates.length} checkpoint tensors hold these values`;
        used.add(t.key);
        break;
      }
    }
    if (!res.key && init.dtype === 'F32' && init.shape.length === 1) await resolveAffine(init, res, tensors, used);
  }
  await resolveSlices(
    pending.filter(({ init, res }) => !res.key && searchable(init) && init.shape.length >= 2),
    tensors,
    chunk,
  );
  for (const { init, res } of pending) {
    if (!res.key && !res.note) {
      res.note = isAllowedUnresolved(init.name) ? 'allowed to stay embedded' : 'no checkpoint tensor holds these values';
    }
    opts.onProgress?.(++done, inits.length);
  }
  return results;
}

/**
 * What neither a name nor a whole tensor explains: initializers equal to a contiguous slice of a
 * checkpoint tensor (see `slices.ts`), in either orientation. Only slices of the pending
 * initializers' element counts are digested.
 */
async function resolveSlices(left: { init: InitializerInput; res: Resolution }[], tensors: readonly KeyTensor[], chunk: number) {
  if (!left.length) return;
  const digests = new Map<string, ReturnType<typeof sliceCandidates>>();
  for (const s of sliceCandidates(tensors, new Set(left.map(({ init }) => numel(init.shape))))) {
    const d = await multisetDigest(s, chunk);
    digests.set(d, [...(digests.get(d) ?? []), s]);
  }
  for (const { init, res } of left) {
    for (const s of digests.get(await multisetDigest(init, chunk)) ?? []) {
      const how = await verify(init, s, chunk);
      if (!how) continue;
      Object.assign(res, { key: s.key, strategy: 'content-slice', transposed: how === 'transposed', slice: s.slice, note: undefined });
      break;
    }
  }
}

/**
 * Last resort for 1-D initializers: a checkpoint vector that equals it up to a folded
 * constant (`onnx::Add_N` = 1 + weight for Gemma-style norms). Unused keys are tried first.
 */
async function resolveAffine(init: InitializerInput, res: Resolution, tensors: readonly KeyTensor[], used: Set<string>): Promise<void> {
  const n = numel(init.shape);
  const candidates = tensors.filter((t) => isFloat(t.dtype) && t.shape.length === 1 && t.shape[0] === n);
  const ordered = [...candidates.filter((t) => !used.has(t.key)), ...candidates.filter((t) => used.has(t.key))];
  for (const t of ordered) {
    const affine = await affineRelation(init, t);
    if (!affine) continue;
    Object.assign(res, { key: t.key, strategy: 'content-affine', transposed: false, affine, note: undefined });
    used.add(t.key);
    return;
  }
}
