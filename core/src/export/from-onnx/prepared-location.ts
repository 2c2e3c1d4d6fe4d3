/**
 * Where a source checkpoint key lands in the prepared layout (docs/ARCHITECTURE.md,
 * "Prepared layout"): dense keys keep their name; a per-expert weight `[out, in]` becomes one
 * slice of the stacked `moe_weights` tensor of its layer, transposed to `[in, out]`
 * (QEfficient's canonical MoE orientation, `QEfficient/transformers/moe/weights.py`).
 */
import type { DType } from '../../formats/dtype';
import { PipelineError } from '../../errors';

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
}

const EXPERT_KEY = /^(.*)\.experts\.(\d+)\.(w1|w2|w3|gate_proj|up_proj|down_proj)\.weight$/;
const ROLE: Record<string, string> = { w1: 'gate', w3: 'up', w2: 'down', gate_proj: 'gate', up_proj: 'up', down_proj: 'down' };

/** Maps `key` through the plan; a PipelineError when prepare would not produce it. */
export function preparedLocation(key: string, plan: PlannedOutputs): PreparedLoc {
  const direct = plan.outputs.get(key);
  if (direct) return { key, ...direct };
  const m = EXPERT_KEY.exec(key);
  if (m) {
    const stacked = `${m[1]}.moe_weights.${ROLE[m[3]!]}`;
    const t = plan.outputs.get(stacked);
    const expert = Number(m[2]);
    if (t && t.shape.length === 3 && expert < t.shape[0]!) return { key: stacked, ...t, expert, transposed: true };
    if (t) {
      throw new PipelineError(`${key}: the prepared ${stacked} has shape ${JSON.stringify(t.shape)}; a legacy export needs the plain stacked layout (no expert-parallel packing)`);
    }
  }
  throw new PipelineError(`${key}: prepare does not produce this key (nor a stacked tensor holding it)`);
}
