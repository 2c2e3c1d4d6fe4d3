/**
 * Where a source checkpoint key lands in the prepared layout (docs/MODULES.md,
 * "Prepared layout"): dense keys keep their name; a per-expert weight `[out, in]` becomes one
 * slice of the stacked `moe_weights` tensor of its layer, transposed to `[in, out]`
 * (QEfficient's canonical MoE orientation, `QEfficient/transformers/moe/weights.py`).
 */
import type { DType } from '../../formats/dtype';
import { PipelineError } from '../../errors';
import { EXPERT_ROLE, FUSED_EXPERTS_KEY, PER_EXPERT_KEY, moeWeightsKey, type MoeRole } from '../../artifacts/prepared-keys';

/** The part of a prepare plan this mapping reads. */
export interface PlannedOutputs {
  outputs: Map<string, { file: string; dtype: DType; shape: number[] }>;
}

/** A prepared tensor, and the expert index when the source key is one expert of it. */
export interface PreparedLoc {
  key: string;
  file: string;
  dtype: DType;
  shape: number[];
  expert?: number;
  /** The prepared slice is the source key's 2-D weight transposed (canonical MoE orientation). */
  transposed?: boolean;
  /**
   * The source key is this tensor and `interleave` alternating along the last axis (GPT-OSS's
   * fused gate/up: gate on even columns, up on odd ones), so its last dim is twice `shape`'s.
   */
  interleave?: PreparedLoc;
  /**
   * The source key is this tensor and `concat` joined along the last axis (transformers 4.57
   * Qwen3-VL-MoE `experts.gate_up_proj [E, H, 2I]`: gate = first I), so its last dim is twice `shape`'s.
   */
  concat?: PreparedLoc;
}

/**
 * Fused experts `<m>.experts.gate_up_proj` / `down_proj`, which prepare splits into canonical
 * `moe_weights`. Row-fused (Qwen3-VL-MoE's released `[E, H, 2I]` → gate/up `[E, H, I]`; `down_proj
 * [E, I, H]` kept): the source `gate_up_proj` is gate ⧺ up on the last axis, `down_proj` the
 * prepared down itself. Column-fused (`rowFused` false: transformers 5 / Qwen3.5-MoE `[E, 2I, H]`
 * / `[E, H, I]`): the same per expert, transposed. `rowFused` is prepare's own decision
 * (`isRowFused`, from config.json's sizes — H may equal 2I, so the shapes alone cannot tell).
 * Undefined for any other key or layout.
 */
export function fusedRowLocation(key: string, shape: readonly number[], plan: PlannedOutputs, rowFused = true): PreparedLoc | undefined {
  const m = FUSED_EXPERTS_KEY.exec(key);
  if (!m || shape.length !== 3) return undefined;
  const at = (role: MoeRole) => {
    const k = moeWeightsKey(m[1]!, role);
    const t = plan.outputs.get(k);
    return t ? { key: k, ...t } : undefined;
  };
  const [E, A, B] = shape as [number, number, number];
  const same = (t: { shape: number[] } | undefined, want: number[]) =>
    !!t && t.shape.length === want.length && t.shape.every((d, i) => d === want[i]);
  if (!rowFused) {
    if (m[2] === 'gate_up_proj') {
      const gate = at('gate');
      const up = at('up');
      return A % 2 === 0 && same(gate, [E, B, A / 2]) && same(up, [E, B, A / 2]) ? { ...gate!, concat: up!, transposed: true } : undefined;
    }
    const down = at('down');
    return same(down, [E, B, A]) ? { ...down!, transposed: true } : undefined;
  }
  if (m[2] === 'gate_up_proj') {
    const gate = at('gate');
    const up = at('up');
    return B % 2 === 0 && same(gate, [E, A, B / 2]) && same(up, [E, A, B / 2]) ? { ...gate!, concat: up! } : undefined;
  }
  const down = at('down');
  return same(down, [E, A, B]) ? down : undefined;
}

/**
 * GraniteMoE's fused experts as HF holds them (`GraniteMoeParallelExperts.weight`
 * `[E, out, in]`), which prepare splits into canonical `moe_weights`: `input_linear.weight
 * [E, 2I, H]` is gate ⧺ up on the last axis of the prepared `[E, H, I]` pair, transposed per
 * expert; `output_linear.weight [E, H, I]` is the prepared down `[E, I, H]` transposed.
 */
export function graniteExpertsLocation(key: string, shape: readonly number[], plan: PlannedOutputs): PreparedLoc | undefined {
  const m = /^(.*)\.(input_linear|output_linear)\.weight$/.exec(key);
  if (!m || shape.length !== 3) return undefined;
  const at = (role: MoeRole) => {
    const k = moeWeightsKey(m[1]!, role);
    const t = plan.outputs.get(k);
    return t ? { key: k, ...t } : undefined;
  };
  const same = (t: { shape: number[] } | undefined, want: number[]) =>
    !!t && t.shape.length === want.length && t.shape.every((d, i) => d === want[i]);
  const [E, A, B] = shape as [number, number, number];
  if (m[2] === 'input_linear') {
    const gate = at('gate');
    const up = at('up');
    return A % 2 === 0 && same(gate, [E, B, A / 2]) && same(up, [E, B, A / 2]) ? { ...gate!, concat: up!, transposed: true } : undefined;
  }
  const down = at('down');
  return same(down, [E, B, A]) ? { ...down!, transposed: true } : undefined;
}

/** Maps `key` through the plan; a PipelineError when prepare would not produce it. */
export function preparedLocation(key: string, plan: PlannedOutputs): PreparedLoc {
  const direct = plan.outputs.get(key);
  if (direct) return { key, ...direct };
  const m = PER_EXPERT_KEY.exec(key);
  if (m) {
    const stacked = moeWeightsKey(m[1]!, EXPERT_ROLE[m[3]!]!);
    const t = plan.outputs.get(stacked);
    const expert = Number(m[2]);
    if (t && t.shape.length === 3 && expert < t.shape[0]!) return { key: stacked, ...t, expert, transposed: true };
    if (t) {
      throw new PipelineError(
        `${key}: the prepared ${stacked} has shape ${JSON.stringify(t.shape)}; a legacy export needs the plain stacked layout (no expert-parallel packing)`,
      );
    }
  }
  throw new PipelineError(`${key}: prepare does not produce this key (nor a stacked tensor holding it)`);
}
