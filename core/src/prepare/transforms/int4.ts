/**
 * GPTQ and AutoAWQ-GEMM int4 Linears, planned: each module's `qweight`, `qzeros`, `scales` (and
 * GPTQ's `g_idx`) become either the dequantized `<m>.weight` `[out, in]` (a plain Linear weight)
 * or, with `--keep-quantized`, the four inputs of `com.microsoft` MatMulNBits. The arithmetic is
 * in int4-kernel.ts. Layouts (facts):
 * - GPTQ (AutoGPTQ / GPTQModel, HF GPTQConfig): `qweight` int32 `[in/8, out]`, input row i in
 *   bits 4·(i mod 8) of word ⌊i/8⌋; `qzeros` int32 `[groups, out/8]`, output column o in nibble
 *   o mod 8; `scales` fp16 `[groups, out]`; `g_idx` int32 `[in]`, the group of input row i (a
 *   permutation under act-order, `desc_act`). v1 (`checkpoint_format: "gptq"`) stores zero − 1:
 *   QEfficient adds the one back on load (`quantizer_gptq.py` → `repack_zeros`, `izeros += 1`);
 *   v2 stores the zero itself. W[o, i] = scales[g, o] · (q[i, o] − zero[g, o]), g = g_idx[i]
 *   (QEfficient `quantizer_utils.py` `dequantize_gptq`).
 * - AWQ GEMM (AutoAWQ `WQLinear_GEMM`): `qweight` int32 `[in, out/8]`, `qzeros` int32
 *   `[groups, out/8]`, `scales` fp16 `[groups, out]`; the 8 columns of a word are packed in the
 *   order [0, 2, 4, 6, 1, 3, 5, 7] (AutoAWQ `AWQ_ORDER`), so column c is nibble [0, 4, 1, 5, 2,
 *   6, 3, 7][c] (QEfficient `reverse_awq_order`); zero points are stored as they are.
 *   W[o, i] = scales[⌊i/group⌋, o] · (q[i, o] − zero[⌊i/group⌋, o]) (`dequantize_gemm`).
 * - MatMulNBits (onnxruntime contrib op; QEfficient `customop/matmulnbits.py`
 *   `QuantLinearORT.pack_on_device`, what `GPTQToMatmulNbitsTransform` and
 *   `AwqToMatmulNbitsTransform` produce): B uint8 `[out, blocks, group/2]`, two input rows per
 *   byte, the even one in the low nibble; scales `[out · blocks]`; zero points uint8
 *   `[out · ⌈blocks/2⌉]`, two blocks per byte, low nibble first; `g_idx` int32 `[in]` only
 *   under act-order.
 * QEfficient refuses act-order GPTQ (`QEffGPTQConfig.post_init`); here g_idx is honoured.
 * QEfficient files: quic/efficient-transformers main ebf55e8, `QEfficient/transformers/quantizers/`
 * and `QEfficient/customop/matmulnbits.py`; tests: core/test/quantization/ (int4-*, gptq-fixture).
 */
import { PipelineError, UsageError } from '../../errors';
import type { DType } from '../../formats/dtype';
import type { Int4Scheme } from '../quant-config';
import type { Int4Module, Int4Part, OutputTensor, SourceTensor } from '../types';

/** The module keys of an int4 Linear. */
const QWEIGHT = /^(.+)\.qweight$/;

/** What {@link planInt4} found: each module's output tensors (by its qweight key) and the keys read with it. */
export interface Int4Plan {
  /** qweight key → the tensors written in its place. */
  outputs: Map<string, OutputTensor[]>;
  /** qweight key → every source key its module reads. */
  inputs: Map<string, string[]>;
  /** qzeros, scales and g_idx keys (read with their qweight, never written as themselves). */
  consumed: Set<string>;
}

/** Scale dtypes read (AutoGPTQ/AutoAWQ save fp16; some exports bf16 or f32). */
const SCALE_DTYPES = new Set<DType>(['F16', 'BF16', 'F32']);

function shapeIs(t: SourceTensor, want: number[], file: string, what: string): void {
  if (t.shape.length !== want.length || t.shape.some((d, i) => d !== want[i]))
    throw new PipelineError(`${file}: "${t.key}" is ${JSON.stringify(t.shape)}, but ${what} needs ${JSON.stringify(want)}`);
}

/** Reads one module's tensors and sizes from the headers (refusing what does not fit the layout). */
function moduleOf(m: string, sources: Map<string, SourceTensor>, s: Int4Scheme, file: string, keep: boolean): Int4Module {
  const need = (suffix: string): SourceTensor => {
    const t = sources.get(`${m}.${suffix}`);
    if (!t)
      throw new PipelineError(`${file}: "${m}.qweight" has no "${m}.${suffix}" beside it (${s.method} needs qweight, qzeros and scales)`);
    return t;
  };
  const qw = need('qweight');
  const qz = need('qzeros');
  const sc = need('scales');
  const gi = sources.get(`${m}.g_idx`);
  for (const t of [qw, qz, ...(gi ? [gi] : [])])
    if (t.dtype !== 'I32') throw new PipelineError(`${file}: "${t.key}" is ${t.dtype}; ${s.method} packs it as I32`);
  if (!SCALE_DTYPES.has(sc.dtype)) throw new PipelineError(`${file}: "${sc.key}" is ${sc.dtype}; expected F16, BF16 or F32 scales`);
  if (qw.shape.length !== 2) throw new PipelineError(`${file}: "${qw.key}" is ${JSON.stringify(qw.shape)}, not a 2-D packed matrix`);
  const [r, c] = qw.shape as [number, number];
  const inF = s.method === 'gptq' ? r * 8 : r;
  const out = s.method === 'gptq' ? c : c * 8;
  const group = s.groupSize === -1 ? inF : s.groupSize;
  const groups = Math.ceil(inF / group);
  shapeIs(qz, [groups, Math.ceil(out / 8)], file, `${s.method} zero points of "${qw.key}" (group ${group})`);
  shapeIs(sc, [groups, out], file, `${s.method} scales of "${qw.key}" (group ${group})`);
  if (gi) shapeIs(gi, [inF], file, `g_idx of "${qw.key}"`);
  if (s.descAct && !gi) throw new PipelineError(`${file}: quantization_config.desc_act is true but "${m}.g_idx" is missing`);
  if (keep) {
    // MatMulNBits: block_size a power of two ≥ 16, whole blocks of input rows
    if (group < 16 || (group & (group - 1)) !== 0)
      throw new UsageError(
        `prepare --keep-quantized: ${m} has group size ${group}; MatMulNBits needs a power of two ≥ 16 (dequantize it instead)`,
      );
    if (out % 8 !== 0) throw new PipelineError(`${file}: "${qw.key}" has ${out} output features, not a multiple of 8`);
  }
  return {
    module: m,
    format: s.method,
    qweight: qw.key,
    qzeros: qz.key,
    scales: sc.key,
    ...(gi ? { gIdx: gi.key } : {}),
    in: inF,
    out,
    group,
    groups,
    zeroOffset: s.zeroOffset,
    actOrder: s.descAct,
  };
}

/** The output tensors of one module: its dequantized weight, or its MatMulNBits parts. */
function tensorsOf(mod: Int4Module, target: DType, keep: boolean): OutputTensor[] {
  const t = (part: Int4Part, key: string, dtype: DType, shape: number[]): OutputTensor => ({
    key,
    dtype,
    shape,
    stages: ['source', keep ? 'repack' : 'dequant', 'final'],
    recipe: { kind: 'int4', module: mod, part },
  });
  const m = mod.module;
  if (!keep) return [t('weight', `${m}.weight`, target, [mod.out, mod.in])];
  return [
    t('qweight', `${m}.qweight`, 'U8', [mod.out, mod.groups, mod.group / 2]),
    t('scales', `${m}.scales`, target, [mod.out * mod.groups]),
    t('qzeros', `${m}.qzeros`, 'U8', [mod.out * Math.ceil(mod.groups / 2)]),
    ...(mod.actOrder ? [t('g_idx', `${m}.g_idx`, 'I32', [mod.in])] : []),
  ];
}

/**
 * Finds the int4 modules of `sources` (every `<m>.qweight`). With `keep`, each module but the
 * LM head stays packed in MatMulNBits' layout (the graph's head is a plain MatMul, so a GPTQ
 * `lm_head: true` head is dequantized); otherwise each becomes `<m>.weight` in `target`.
 * Refuses a qweight without a GPTQ/AWQ scheme (its bytes would be misread as integers).
 */
export function planInt4(
  sources: Map<string, SourceTensor>,
  scheme: Int4Scheme | undefined,
  target: DType,
  file: string,
  keep: boolean,
): Int4Plan {
  const plan: Int4Plan = { outputs: new Map(), inputs: new Map(), consumed: new Set() };
  for (const key of sources.keys()) {
    const m = QWEIGHT.exec(key)?.[1];
    if (m === undefined) continue;
    if (!scheme)
      throw new PipelineError(`${file}: "${key}" is a packed int4 weight, but config.json declares no GPTQ/AWQ quantization_config`);
    if (sources.has(`${m}.weight`)) throw new PipelineError(`${file}: "${m}" has both "${m}.weight" and "${key}"`);
    const packed = keep && m !== 'lm_head' && !m.endsWith('.lm_head');
    const mod = moduleOf(m, sources, scheme, file, packed);
    plan.outputs.set(key, tensorsOf(mod, target, packed));
    const keys = [mod.qweight, mod.qzeros, mod.scales, ...(mod.gIdx ? [mod.gIdx] : [])];
    plan.inputs.set(key, keys);
    for (const k of keys.slice(1)) plan.consumed.add(k);
  }
  // no qweight under a GPTQ/AWQ config: a prepared copy (its config.json is the source's), plain weights
  return plan;
}
