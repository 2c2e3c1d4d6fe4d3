/**
 * GPT-OSS MXFP4 experts: `<m>.experts.{gate_up,down}_proj_{blocks,scales,bias}` are
 * dequantized (HF `convert_moe_packed_tensors`: blocks `u8 [E, R, G, 16]`, scales
 * `u8 [E, R, G]`, value table, low nibble → even column, high → odd, × 2^(scale−127); result
 * `[E, R, G·32]`) and gate/up split interleaved: rows `0::2` are gate, `1::2` up. The biases
 * follow the same split. Gate and up are computed from one read of each expert's blocks.
 * Outputs are in QEfficient's canonical orientation (`QEfficient/transformers/moe/weights.py`):
 * each expert's dequantized `[out, in]` matrix transposed — gate/up `[E, H, I]`, down `[E, I, H]`.
 */
import { PipelineError } from '../../errors';
import type { SlicePlan, SourceTensor } from '../types';
import { checkExpertCount, need, stacked, type MoeGroup } from './moe-common';
import { moeWeightsPrefix } from '../../artifacts/prepared-keys';

/** `<m>.experts.gate_up_proj_blocks`. */
export const MXFP4_BLOCKS = /^(.*)\.experts\.(gate_up|down)_proj_blocks$/;

/** The sizes of MXFP4 `blocks` `u8 [E, rows, G, 16]` and `scales` `u8 [E, rows, G]`, refusing any other layout. */
export function checkPacked(blocks: SourceTensor, scales: SourceTensor): { E: number; R: number; G: number } {
  if (blocks.dtype !== 'U8' || scales.dtype !== 'U8')
    throw new PipelineError(`${blocks.key}: MXFP4 blocks and scales must be U8 (got ${blocks.dtype}, ${scales.dtype})`);
  const [E, R, G, B] = blocks.shape;
  if (blocks.shape.length !== 4 || B !== 16)
    throw new PipelineError(`${blocks.key}: shape ${JSON.stringify(blocks.shape)} is not [E, rows, G, 16]`);
  if (scales.shape.length !== 3 || scales.shape[0] !== E || scales.shape[1] !== R || scales.shape[2] !== G) {
    throw new PipelineError(
      `${scales.key}: shape ${JSON.stringify(scales.shape)} does not match blocks ${JSON.stringify(blocks.shape)} (want [E, rows, G])`,
    );
  }
  return { E: E!, R: R!, G: G! };
}

function checkBias(bias: SourceTensor, E: number, R: number): void {
  if (bias.shape.length !== 2 || bias.shape[0] !== E || bias.shape[1] !== R) {
    throw new PipelineError(`${bias.key}: shape ${JSON.stringify(bias.shape)} is not [E, rows] = ${JSON.stringify([E, R])}`);
  }
}

/** Finds GPT-OSS MXFP4 expert groups among `sources`. */
export function planMxfp4(sources: Map<string, SourceTensor>, configured?: number): MoeGroup[] {
  const modules = new Set<string>();
  for (const key of sources.keys()) {
    const m = MXFP4_BLOCKS.exec(key);
    if (m) modules.add(m[1]!);
  }
  const groups: MoeGroup[] = [];
  for (const module of modules) {
    const p = `${module}.experts`;
    const keys = [
      'gate_up_proj_blocks',
      'gate_up_proj_scales',
      'gate_up_proj_bias',
      'down_proj_blocks',
      'down_proj_scales',
      'down_proj_bias',
    ].map((n) => `${p}.${n}`);
    const [gub, gus, gubias, db, ds, dbias] = keys.map((k) => need(sources, k, module)) as SourceTensor[];
    const gu = checkPacked(gub!, gus!);
    const dn = checkPacked(db!, ds!);
    if (gu.R % 2 !== 0) throw new PipelineError(`${gub!.key}: ${gu.R} rows cannot split into interleaved gate/up`);
    if (dn.E !== gu.E) throw new PipelineError(`${db!.key}: ${dn.E} experts, but ${gub!.key} has ${gu.E}`);
    checkBias(gubias!, gu.E, gu.R);
    checkBias(dbias!, dn.E, dn.R);
    checkExpertCount(gu.E, configured, module);
    const E = gu.E;
    const I = gu.R / 2;
    const H = gu.G * 32;
    if (dn.R !== H || dn.G * 32 !== I) {
      throw new PipelineError(`${db!.key}: dequantizes to [${dn.R}, ${dn.G * 32}] per expert, not [H, I] = [${H}, ${I}]`);
    }
    const mx = (blocks: string, scales: string, parity?: 0 | 1): SlicePlan[] =>
      Array.from({ length: E }, (_, e) => ({
        kind: 'mxfp4' as const,
        blocks,
        scales,
        expert: e,
        ...(parity !== undefined ? { parity } : {}),
      }));
    const cols = (src: string, parity: 0 | 1): SlicePlan[] =>
      Array.from({ length: E }, (_, e) => ({ kind: 'columns' as const, src, row: e, parity }));
    const rowBytes = dbias!.byteLength / E;
    const downBias: SlicePlan[] = Array.from({ length: E }, (_, e) => ({
      kind: 'range' as const,
      src: dbias!.key,
      start: e * rowBytes,
      length: rowBytes,
    }));
    const m = moeWeightsPrefix(module);
    groups.push({
      module,
      transform: 'mxfp4',
      experts: E,
      inputs: keys,
      tensors: [
        stacked(`${m}.gate`, 'dequant', 'F32', [H, I], mx(gub!.key, gus!.key, 0), { pairedWith: `${m}.up`, transposed: true }),
        stacked(`${m}.up`, 'dequant', 'F32', [H, I], mx(gub!.key, gus!.key, 1), { pairedWith: `${m}.gate`, transposed: true }),
        stacked(`${m}.down`, 'dequant', 'F32', [I, H], mx(db!.key, ds!.key), { transposed: true }),
        stacked(`${m}.gate_bias`, 'split', gubias!.dtype, [I], cols(gubias!.key, 0), { pairedWith: `${m}.up_bias` }),
        stacked(`${m}.up_bias`, 'split', gubias!.dtype, [I], cols(gubias!.key, 1), { pairedWith: `${m}.gate_bias` }),
        stacked(`${m}.down_bias`, 'stacked', dbias!.dtype, [H], downBias),
      ],
    });
  }
  return groups;
}
