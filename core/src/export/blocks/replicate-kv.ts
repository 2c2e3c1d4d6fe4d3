/**
 * `export --replicate-kv-heads N`: QEfficient's `ReplicateKVHeadTransform`
 * (`QEfficient/transformers/models/pytorch_transforms.py`, main ebf55e81), which
 * `QEFFBaseModel.maybe_apply_replicate_kv_transform` applies when `qaic_config` has
 * `replicate_kv_heads` so a GQA model's KV heads can be sliced over more devices. It duplicates
 * each kv head's rows of k_proj and v_proj (weight and bias) N times in place
 * (`repeat_interleave` over heads: new head k·N + r is old head k), and sets
 * num_key_value_heads to N × the original: the cache holds N × the heads and each query group
 * reads its own copy, so the logits do not change.
 *
 * Weight-free, the checkpoint's k_proj / v_proj keep their shapes (the spec names them as they
 * are); the graph repeats the projections' outputs per head, which is the same product as the
 * repeated rows.
 */
import type { ArchSpec } from './arch';
import { UsageError } from '../../errors';
import { reshape, type Ctx } from './ops';

/** ONNX metadata of a replicated graph: `{"orig_kv_heads", "num_replicate_kv_heads"}` (QEfficient records orig_kv_heads in the config it hashes). */
export const REPLICATE_KV_METADATA = 'weight_spec.replicate_kv_heads';

/** The architecture with `n` × its KV heads, refused as `ReplicateKVHeadTransform.apply` refuses. */
export function replicateKvArch(a: ArchSpec, n: number, file: string): ArchSpec {
  if (n <= 1) return a;
  const bad = a.layers.find((l) => l.attn.kind !== 'separate' && l.attn.kind !== 'fused');
  if (bad)
    throw new UsageError(
      `${file}: --replicate-kv-heads: ${a.modelType} has ${bad.attn.kind} layers (QEfficient replicates MHA/GQA k_proj and v_proj only)`,
    );
  if (a.layers.some((l) => l.states || (l.kNorm && l.qkNormOver === 'projection')))
    throw new UsageError(
      `${file}: --replicate-kv-heads: ${a.modelType}'s attention has its own cache layout or a k norm over the whole projection`,
    );
  if (a.nKv === a.nHeads)
    throw new UsageError(
      `${file}: --replicate-kv-heads: RepeatKV is supported only for GQA/MQA models where num_key_value_heads is smaller than num_attention_heads; got num_attention_heads=${a.nHeads}, num_key_value_heads=${a.nKv}`,
    );
  const kv = n * a.nKv;
  if (kv > a.nHeads || a.nHeads % kv !== 0)
    throw new UsageError(
      `${file}: --replicate-kv-heads: invalid RepeatKV configuration: num_attention_heads=${a.nHeads}, orig_kv_heads=${a.nKv}, num_replicate_kv_heads=${n}, new_kv_heads=${kv} (expected new_kv_heads <= num_attention_heads and divisibility)`,
    );
  return { ...a, nKv: kv, kvRepeat: n };
}

/** A k or v projection `[N, (nKv / repeat)·hd]` → `[N, nKv·hd]`, each head repeated `repeat` times in place. */
export function repeatKvHeads(c: Ctx, t: string, a: ArchSpec): string {
  const n = a.kvRepeat!;
  const g = c.g;
  const perHead = reshape(c, t, [0, a.nKv / n, 1, a.headDim]);
  return reshape(c, g.op('Expand', [perHead, g.ints([1, 1, n, 1])]), [0, -1]);
}
