/**
 * Slices of checkpoint tensors a legacy export may hold as separate initializers: a
 * `torch.onnx.export` that traces a loop over experts folds `weight[e]` (and, for a fused
 * gate/up, `weight[e].chunk(2)`) into per-expert constants — GraniteMoE's `input_linear [E, 2I, H]`
 * / `output_linear [E, H, I]`, Llama 4's and GPT-OSS's `experts.gate_up_proj` / `down_proj`,
 * a fused `qkv_proj` / `gate_up_proj` cut into its pieces. Only contiguous slices are views:
 * one expert of a 3-D tensor, and a block of rows of a 2-D tensor or of one expert (the pieces
 * of a fused `[out, in]` weight). Each is a {@link TensorSource} at an offset, so the digest and
 * the exact comparisons of `content.ts` apply unchanged, in either orientation.
 */
import { DTYPE_SIZE, isFloat } from '../formats/dtype';
import { numel, type TensorSource } from './content';

/** Which part of a checkpoint tensor a slice is: expert `expert` of axis 0 (3-D), then rows `[start, start + length)`. */
export interface SliceOf {
  expert?: number;
  rows?: { start: number; length: number };
}

/** A contiguous slice of checkpoint tensor `key`. */
export interface SliceTensor extends TensorSource {
  key: string;
  slice: SliceOf;
}

/** Row blocks of a `[R, C]` matrix worth trying for a wanted element count: R/k-row pieces, the head and the tail. */
function rowBlocks(R: number, C: number, wanted: ReadonlySet<number>): { start: number; length: number }[] {
  const out = new Map<string, { start: number; length: number }>();
  for (const n of wanted) {
    if (n % C !== 0) continue;
    const r = n / C;
    if (r >= R || r < 1) continue;
    const starts = new Set([0, R - r]);
    if (R % r === 0) for (let s = 0; s < R; s += r) starts.add(s);
    for (const start of starts) out.set(`${start}:${r}`, { start, length: r });
  }
  return [...out.values()];
}

/**
 * Every contiguous slice of the float tensors in `tensors` whose element count is in `wanted`
 * (never a whole tensor, and never a dequantized one, whose values are not stored).
 */
export function sliceCandidates(tensors: readonly (TensorSource & { key: string })[], wanted: ReadonlySet<number>): SliceTensor[] {
  const out: SliceTensor[] = [];
  for (const t of tensors) {
    if (!isFloat(t.dtype) || t.dequant || t.shape.length < 2 || t.shape.length > 3) continue;
    const size = DTYPE_SIZE[t.dtype];
    const view = (offset: number, shape: number[], slice: SliceOf): SliceTensor => ({
      key: t.key,
      file: t.file,
      dtype: t.dtype,
      offset: t.offset + offset,
      byteLength: numel(shape) * size,
      shape,
      slice,
    });
    const matrices: { offset: number; R: number; C: number; expert?: number }[] = [];
    if (t.shape.length === 3) {
      const [E, R, C] = t.shape as [number, number, number];
      for (let e = 0; e < E; e++) {
        if (wanted.has(R * C)) out.push(view(e * R * C * size, [R, C], { expert: e }));
        matrices.push({ offset: e * R * C * size, R, C, expert: e });
      }
    } else {
      const [R, C] = t.shape as [number, number];
      matrices.push({ offset: 0, R, C });
    }
    for (const m of matrices) {
      for (const rows of rowBlocks(m.R, m.C, wanted)) {
        out.push(
          view(m.offset + rows.start * m.C * size, [rows.length, m.C], { ...(m.expert !== undefined ? { expert: m.expert } : {}), rows }),
        );
      }
    }
  }
  return out;
}
