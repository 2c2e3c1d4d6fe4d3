/**
 * FP8 dequantization, planned: pairs each FP8 weight with its scale tensor (HF fine-grained
 * FP8 `<name>.weight_scale_inv` / fused experts' `<name>_scales_inv`; compressed-tensors
 * `<name>.weight_scale`), checks shapes against the block size, and drops the activation
 * scales. The pairing is applied to the recipes of every planned tensor just before its task
 * is made ({@link attachScales}), so the dequantization is the first step of whatever the
 * tensor goes through — dense conversion, expert stacking, fused splits, expert-parallel
 * packing — exactly as MXFP4 dequantizes before the MoE transforms.
 */
import { PipelineError } from '../../errors';
import { elementCount } from '../../formats/safetensors';
import { describeScheme, refuseQuantization, type QuantScheme } from '../quant-config';
import type { OutputTensor, ScaleRef, SlicePlan, SourceTensor } from '../types';

/** FP8 storage dtypes a scale may apply to. */
const FP8 = new Set(['F8_E4M3', 'F8_E5M2']);
/** Scale dtypes (torch saves float32 scales; some exports bf16). */
const SCALE_DTYPES = new Set(['F32', 'BF16', 'F16']);
/** Activation quantization parameters: the graph computes activations in float. */
const ACTIVATION_KEY = /\.(input_scale|input_zero_point|output_scale|output_zero_point)$/;

/** What {@link planDequant} found: weight key → its scale, and the keys no output keeps. */
export interface DequantPlan {
  scheme?: QuantScheme;
  scales: Map<string, ScaleRef>;
  /** Scale and activation keys, consumed or dropped (never planned as outputs). */
  consumed: Set<string>;
}

/** The weight a scale key belongs to, by the scheme's naming. */
export function weightOfScaleKey(key: string, method: QuantScheme['method'] | undefined): string | undefined {
  // Every scale name below contains "_scale": one substring test spares the regular
  // expressions for the other keys (the language server asks this of every input, per check).
  if (!key.includes('_scale')) return undefined;
  if (method !== 'compressed-tensors') {
    let m = /^(.+)\.weight_scale_inv$/.exec(key);
    if (m) return `${m[1]}.weight`;
    m = /^(.+)_scales?_inv$/.exec(key);
    if (m) return m[1];
  }
  if (method !== 'fp8') {
    const m = /^(.+)\.weight_scale$/.exec(key);
    if (m) return `${m[1]}.weight`;
  }
  return undefined;
}

/** The block a compressed-tensors scale of `scale` shape implies for a `[R, C]` weight. */
function compressedBlock(
  s: Extract<QuantScheme, { method: 'compressed-tensors' }>,
  R: number,
  C: number,
  scale: SourceTensor,
): [number, number] | undefined {
  const n = elementCount(scale.shape);
  const last = scale.shape.slice(-2);
  const is = (a: number, b: number) => (scale.shape.length >= 2 ? last[0] === a && last[1] === b : n === a * b);
  if (n === 1 && s.strategies.includes('tensor')) return [R, C];
  if (is(R, 1) && s.strategies.includes('channel')) return [1, C];
  for (const g of s.groupSizes) if (is(R, Math.ceil(C / g))) return [1, g];
  for (const b of s.blocks) if (is(Math.ceil(R / b[0]), Math.ceil(C / b[1]))) return b;
  return undefined;
}

/**
 * Pairs FP8 weights with their scales. Refuses, in one line, an FP8 tensor without a scale and
 * scales in a checkpoint whose config declares no quantization (naming `configFile`), a scale
 * without its FP8 weight and a scale or weight of the wrong dtype or shape (naming the
 * safetensors file holding that tensor).
 */
export function planDequant(sources: Map<string, SourceTensor>, scheme: QuantScheme | undefined, configFile: string): DequantPlan {
  const plan: DequantPlan = { ...(scheme ? { scheme } : {}), scales: new Map(), consumed: new Set() };
  const method = scheme?.method;
  if (method === 'mxfp4' || method === 'gptq' || method === 'awq') return plan;
  for (const [key, scale] of sources) {
    // Every scale, zero point and activation key ends in one of these (a cheap first test: MoE checkpoints have ~10⁵ keys).
    if (!key.endsWith('_inv') && !key.endsWith('_scale') && !key.endsWith('_point')) continue;
    if (scheme && ACTIVATION_KEY.test(key)) {
      plan.consumed.add(key);
      continue;
    }
    if (/\.weight_zero_point$/.test(key))
      refuseQuantization(configFile, method ?? 'none', `with a weight zero point ("${key}") is asymmetric`);
    const wkey = weightOfScaleKey(key, method);
    if (!wkey) continue;
    if (!scheme)
      throw new PipelineError(
        `${configFile}: "${key}" is a quantization scale, but config.json declares no quantization_config (its weights would be misread)`,
      );
    const w = sources.get(wkey);
    // What is wrong with a tensor is said of the safetensors file holding it, not of config.json.
    if (!w) throw new PipelineError(`${scale.file}: scale "${key}" has no weight "${wkey}" in the checkpoint`);
    if (!FP8.has(w.dtype))
      throw new PipelineError(`${w.file}: "${wkey}" is ${w.dtype}, but "${key}" scales it as FP8 (${describeScheme(scheme)})`);
    if (!SCALE_DTYPES.has(scale.dtype))
      throw new PipelineError(`${scale.file}: scale "${key}" is ${scale.dtype}; expected F32, BF16 or F16`);
    if (w.shape.length < 2)
      throw new PipelineError(`${w.file}: FP8 weight "${wkey}" has shape ${JSON.stringify(w.shape)}; a [.., rows, cols] matrix is needed`);
    const R = w.shape[w.shape.length - 2]!;
    const C = w.shape[w.shape.length - 1]!;
    const block =
      scheme.method === 'fp8'
        ? (scheme.block ?? [R, C])
        : scheme.method === 'compressed-tensors'
          ? compressedBlock(scheme, R, C, scale)
          : undefined;
    if (!block)
      throw new PipelineError(
        `${scale.file}: scale "${key}" ${JSON.stringify(scale.shape)} fits none of the ${describeScheme(scheme)} strategies for "${wkey}" [${R}, ${C}]`,
      );
    const grid: [number, number] = [Math.ceil(R / block[0]), Math.ceil(C / block[1])];
    const lead = elementCount(w.shape.slice(0, -2));
    const lastTwo = scale.shape.slice(-2);
    const fits =
      elementCount(scale.shape) === lead * grid[0] * grid[1] &&
      (scale.shape.length < 2 || (lastTwo[0] === grid[0] && lastTwo[1] === grid[1]));
    if (!fits) {
      throw new PipelineError(
        `${scale.file}: scale "${key}" is ${JSON.stringify(scale.shape)}, but "${wkey}" ${JSON.stringify(w.shape)} in ${block[0]}×${block[1]} blocks needs ${JSON.stringify([...w.shape.slice(0, -2), ...grid])}`,
      );
    }
    plan.scales.set(wkey, { key, block, grid });
    plan.consumed.add(key);
  }
  for (const [key, t] of sources) {
    if (!FP8.has(t.dtype) || plan.scales.has(key)) continue;
    if (!scheme)
      throw new PipelineError(
        `${configFile}: "${key}" is ${t.dtype} but config.json declares no quantization_config: its scales are unknown, so prepare would misread it`,
      );
    const want =
      scheme.method === 'fp8' ? `"${key.replace(/\.weight$/, '')}.weight_scale_inv"` : `"${key.replace(/\.weight$/, '')}.weight_scale"`;
    refuseQuantization(
      configFile,
      scheme.method,
      `but "${key}" (${t.dtype}) has no scale tensor ${want}: fp8 without scales cannot be dequantized`,
    );
  }
  return plan;
}

function withScale(slot: SlicePlan, plan: DequantPlan, used: Set<string>): SlicePlan {
  if (slot.kind === 'whole' || slot.kind === 'range' || slot.kind === 'half-columns') {
    const scale = plan.scales.get(slot.src);
    if (!scale) return slot;
    used.add(scale.key);
    return { ...slot, scale };
  }
  if (slot.kind === 'columns' && plan.scales.has(slot.src))
    throw new PipelineError(`${slot.src}: an FP8 tensor cannot be split by columns before dequantization`);
  return slot;
}

/**
 * Attaches each quantized source's scale to the recipes reading it, and returns the scale
 * keys the task must read too (appended to its inputs).
 */
export function attachScales(tensors: OutputTensor[], plan: DequantPlan): { tensors: OutputTensor[]; scaleKeys: string[] } {
  if (plan.scales.size === 0) return { tensors, scaleKeys: [] };
  const used = new Set<string>();
  const out = tensors.map((t): OutputTensor => {
    if (t.recipe.kind === 'convert') {
      const scale = plan.scales.get(t.recipe.src);
      if (!scale) return t;
      used.add(scale.key);
      return { ...t, stages: ['source', 'dequant', ...t.stages.slice(1)], recipe: { ...t.recipe, scale } };
    }
    if (t.recipe.kind === 'int4') return t;
    const slots = t.recipe.slots.map((s) => withScale(s, plan, used));
    const changed = slots.some((s, i) => s !== (t.recipe as { slots: SlicePlan[] }).slots[i]);
    return changed ? { ...t, stages: ['source', 'dequant', ...t.stages.slice(1)], recipe: { kind: 'slots', slots } } : t;
  });
  return { tensors: out, scaleKeys: [...used] };
}
