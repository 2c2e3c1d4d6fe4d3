/**
 * Fused-expert split: `<m>.experts.gate_up_proj [E, 2I, H]` (+ `<m>.experts.down_proj
 * [E, H, I]`) and GraniteMoE's `<m>.input_linear.weight [E, 2I, H]` /
 * `<m>.output_linear.weight [E, H, I]` become `<m>.moe_weights.{gate,up,down}` in
 * QEfficient's canonical orientation (`QEfficient/transformers/moe/weights.py`
 * `build_canonical_expert_weights(fused_split_dim=1, transpose_gate_up=True,
 * transpose_down=True)`): gate is each expert's first I rows, up the last I rows (GraniteMoE's
 * `chunk(2, dim=-1)` order), each transposed to `[H, I]`; down is transposed to `[I, H]`.
 * Each source byte is read once (gate and up read disjoint ranges).
 *
 * Released Qwen3-VL-MoE checkpoints (transformers 4.57's `bmm` layout) store the other
 * orientation: `gate_up_proj [E, H, 2I]` (gate = first I of the last axis) and `down_proj
 * [E, I, H]` — already canonical per expert, so gate/up keep each row's half (one read of the
 * expert feeds both) and down is taken as it is. Which layout a checkpoint has is decided from
 * config.json's hidden / MoE-intermediate sizes (DESIGN.md: never from one axis, as H may equal
 * 2I or I); without them, from the two tensors' shapes together, which never fit both layouts.
 */
import { PipelineError } from '../../errors';
import { DTYPE_SIZE, isFloat } from '../../formats/dtype';
import type { SlicePlan, SourceTensor } from '../types';
import { checkExpertCount, need, stacked, type MoeGroup } from './moe-common';
import { moeWeightsKey } from '../../artifacts/prepared-keys';

/** `<m>.experts.gate_up_proj` (optionally `.weight`), not GPT-OSS's `_blocks` variant. */
export const FUSED_GATE_UP = /^(.*)\.experts\.gate_up_proj(\.weight)?$/;
/** GraniteMoE's fused input projection. */
export const GRANITE_INPUT = /^(.*)\.input_linear\.weight$/;

/** Hidden and MoE-intermediate sizes from config.json (text_config for VLMs), when it says. */
export interface MoeSizes {
  hidden?: number;
  intermediate?: number;
}

const same = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((d, i) => d === b[i]);

/**
 * `[E, H, 2I]` + `[E, I, H]` (transformers 4.57 Qwen3-VL-MoE): true when the config's sizes (or both shapes) say so.
 * Also what `export --onnx` asks to rebuild a legacy graph's fused experts from the prepared ones.
 */
export function isRowFused(fused: Pick<SourceTensor, 'key' | 'shape'>, down: Pick<SourceTensor, 'shape'>, sizes: MoeSizes): boolean {
  if (fused.shape.length !== 3 || down.shape.length !== 3) return false;
  const [E, A, B] = fused.shape as [number, number, number];
  if (sizes.hidden !== undefined && sizes.intermediate !== undefined) {
    const { hidden: H, intermediate: I } = sizes;
    const rowFused = same(fused.shape, [E, H, 2 * I]) && same(down.shape, [E, I, H]);
    const colFused = same(fused.shape, [E, 2 * I, H]) && same(down.shape, [E, H, I]);
    if (!rowFused && !colFused) {
      throw new PipelineError(
        `${fused.key}: shapes ${JSON.stringify(fused.shape)} / ${JSON.stringify(down.shape)} fit neither [E, 2I, H] / [E, H, I] nor [E, H, 2I] / [E, I, H] for config.json's hidden ${H}, intermediate ${I}`,
      );
    }
    return rowFused;
  }
  // no sizes: A = 2·down[2] ∧ B = down[1] (column-fused) and B = 2·down[1] ∧ A = down[2] (row-fused) exclude each other
  return B === 2 * down.shape[1]! && A === down.shape[2]! && down.shape[0] === E;
}

function splitRows(module: string, fused: SourceTensor, down: SourceTensor, configured: number | undefined, transform: string): MoeGroup {
  const [E, H, twoI] = fused.shape as [number, number, number];
  const I = twoI / 2;
  checkExpertCount(E, configured, module);
  const half = (h: 0 | 1): SlicePlan[] =>
    Array.from({ length: E }, (_, e) => ({ kind: 'half-columns' as const, src: fused.key, expert: e, half: h }));
  return splitGroup(module, transform, fused, down, [E, H, I], half, false);
}

/**
 * The group of one fused gate/up split: gate and up from the fused tensor's halves (`half`),
 * down stacked whole expert by whole expert. `transposed`: the stored layout is `[out, in]`
 * (column-fused); else gate and up are written as a pair from one read of each row.
 */
function splitGroup(
  module: string,
  transform: string,
  fused: SourceTensor,
  down: SourceTensor,
  [E, H, I]: [number, number, number],
  half: (h: 0 | 1) => SlicePlan[],
  transposed: boolean,
): MoeGroup {
  const downBytes = H * I * DTYPE_SIZE[down.dtype];
  const downSlots: SlicePlan[] = Array.from({ length: E }, (_, e) => ({
    kind: 'range' as const,
    src: down.key,
    start: e * downBytes,
    length: downBytes,
  }));
  const [gate, up] = [moeWeightsKey(module, 'gate'), moeWeightsKey(module, 'up')];
  return {
    module,
    transform,
    experts: E,
    inputs: [fused.key, down.key],
    tensors: [
      stacked(gate, 'split', fused.dtype, [H, I], half(0), transposed ? { transposed } : { pairedWith: up }),
      stacked(up, 'split', fused.dtype, [H, I], half(1), transposed ? { transposed } : { pairedWith: gate }),
      stacked(moeWeightsKey(module, 'down'), 'stacked', down.dtype, [I, H], downSlots, transposed ? { transposed } : {}),
    ],
  };
}

function split(
  module: string,
  fused: SourceTensor,
  down: SourceTensor,
  configured: number | undefined,
  transform: string,
  sizes: MoeSizes = {},
): MoeGroup {
  if (!isFloat(fused.dtype) || !isFloat(down.dtype))
    throw new PipelineError(`${fused.key}: fused experts must be float tensors (got ${fused.dtype}, ${down.dtype})`);
  if (isRowFused(fused, down, sizes)) return splitRows(module, fused, down, configured, transform);
  if (fused.shape.length !== 3 || fused.shape[1]! % 2 !== 0) {
    throw new PipelineError(`${fused.key}: shape ${JSON.stringify(fused.shape)} is not [E, 2I, H]`);
  }
  const [E, twoI, H] = fused.shape as [number, number, number];
  const I = twoI / 2;
  if (down.shape.length !== 3 || down.shape[0] !== E || down.shape[1] !== H || down.shape[2] !== I) {
    throw new PipelineError(
      `${down.key}: shape ${JSON.stringify(down.shape)} is not [E, H, I] = ${JSON.stringify([E, H, I])} (from ${fused.key})`,
    );
  }
  checkExpertCount(E, configured, module);
  const rowBytes = H * DTYPE_SIZE[fused.dtype];
  const expertBytes = twoI * rowBytes;
  const half = (h: 0 | 1): SlicePlan[] =>
    Array.from({ length: E }, (_, e) => ({
      kind: 'range' as const,
      src: fused.key,
      start: e * expertBytes + h * I * rowBytes,
      length: I * rowBytes,
    }));
  return splitGroup(module, transform, fused, down, [E, H, I], half, true);
}

/** Finds fused gate/up experts (generic and GraniteMoE) among `sources`. */
export function planFusedSplit(sources: Map<string, SourceTensor>, configured?: number, sizes: MoeSizes = {}): MoeGroup[] {
  const groups: MoeGroup[] = [];
  for (const key of sources.keys()) {
    let m = FUSED_GATE_UP.exec(key);
    if (m) {
      const module = m[1]!;
      const downKey = `${module}.experts.down_proj${m[2] ?? ''}`;
      groups.push(split(module, sources.get(key)!, need(sources, downKey, module), configured, 'fused-split', sizes));
      continue;
    }
    m = GRANITE_INPUT.exec(key);
    if (m) {
      const module = m[1]!;
      groups.push(split(module, sources.get(key)!, need(sources, `${module}.output_linear.weight`, module), configured, 'fused-split'));
    }
  }
  return groups;
}

/** True for a down projection consumed by a fused group (so it is not also planned dense). */
export function isFusedDown(key: string, sources: Map<string, SourceTensor>): boolean {
  const d = /^(.*)\.experts\.down_proj(\.weight)?$/.exec(key);
  if (d) return sources.has(`${d[1]}.experts.gate_up_proj${d[2] ?? ''}`);
  const g = /^(.*)\.output_linear\.weight$/.exec(key);
  return g ? sources.has(`${g[1]}.input_linear.weight`) : false;
}
