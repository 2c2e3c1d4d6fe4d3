/**
 * Quantized checkpoints in a spec: the checker says what prepare would say. A spec whose
 * files lie in a checkpoint with a quantization prepare cannot undo gets prepare's refusal
 * (`quantization-unsupported`); an input naming a scale tensor (`*_scale_inv`,
 * `weight_scale`) as a weight gets `quantization-scale`; an input bound to a raw FP8 weight,
 * or to a GPTQ/AWQ module's packed `qweight` / `qzeros` / `scales` / `g_idx` in the source
 * layout, gets `quantized-weight` (the graph needs prepare's output: bind the prepared checkpoint). Hover uses {@link describeQuantizedKey} for the same facts.
 */
import { existsSync } from 'node:fs';
import { readJsonTextSync } from '../paths';
import path from 'node:path';
import { FormatError } from '../errors';
import { memoByStamp } from '../file-stamp';
import { hasDtype, type SafetensorsHeader, type TensorInfo } from '../formats/safetensors';
import { MOE_WEIGHTS_KEY } from '../artifacts/prepared-keys';
import { MANIFEST_FILE, describeScheme, isInt4, quantSchemeOf, weightOfScaleKey, type QuantScheme } from '../prepare';
import { fileLabel, report, type CheckContext } from './context';
import { looksPrepared } from './prepared';

/** What a checkpoint directory's config.json says about quantization. */
export interface QuantFacts {
  configFile: string;
  scheme?: QuantScheme;
  /** Prepare's refusal, when the quantization cannot be undone. */
  refusal?: string;
  /** `torch_dtype` (what the model computes in, the natural dequantized dtype). */
  torchDtype?: string;
}

/** The facts of one config.json (an unreadable one is not this check's business: undefined). */
const factsOfConfig = memoByStamp((configFile): QuantFacts | undefined => {
  const config = JSON.parse(readJsonTextSync(configFile)) as Record<string, unknown>;
  if (!config || typeof config !== 'object' || config.quantization_config == null) return undefined;
  const facts: QuantFacts = { configFile, ...(typeof config.torch_dtype === 'string' ? { torchDtype: config.torch_dtype } : {}) };
  try {
    const scheme = quantSchemeOf(config, configFile);
    if (scheme) facts.scheme = scheme;
  } catch (e) {
    facts.refusal = e instanceof FormatError ? e.detail : String(e);
  }
  return facts;
}, 256);

/**
 * The quantization facts of the checkpoint directory `dir` (its config.json), or undefined
 * without a config, without quantization, or for a prepared directory (already dequantized).
 */
export function quantFactsOf(dir: string): QuantFacts | undefined {
  if (looksPrepared(path.join(dir, 'x')) || existsSync(path.join(dir, MANIFEST_FILE))) return undefined;
  return factsOfConfig(path.join(dir, 'config.json'));
}

const FP8 = new Set(['F8_E4M3', 'F8_E5M2']);

const fp8Headers = new WeakMap<SafetensorsHeader, boolean>();
/** Whether `header` stores any FP8 tensor (memoized: headers are immutable and cached). */
function hasFp8(header: SafetensorsHeader): boolean {
  let has = fp8Headers.get(header);
  if (has === undefined) {
    // a header read from a file answers from its dtype column (no object per tensor)
    has = hasDtype(header.tensors, (d) => FP8.has(d));
    fp8Headers.set(header, has);
  }
  return has;
}

/** The weight `key` scales, when it is a scale tensor of a quantized checkpoint. */
function scaledWeight(key: string, header: SafetensorsHeader, facts: QuantFacts | undefined): string | undefined {
  const w = weightOfScaleKey(key, facts?.scheme?.method);
  if (!w) return undefined;
  const t = header.tensors.get(w);
  return (t && FP8.has(t.dtype)) || facts?.scheme ? w : undefined;
}

/** The scale tensor of FP8 weight `key` in `header`, if any. */
function scaleOf(key: string, header: SafetensorsHeader): TensorInfo | undefined {
  const base = key.replace(/\.weight$/, '');
  for (const k of [`${base}.weight_scale_inv`, `${key}_scale_inv`, `${key}_scales_inv`, `${base}.weight_scale`]) {
    const t = header.tensors.get(k);
    if (t) return t;
  }
  return undefined;
}

/** The quantization problems of the spec (after the files and inputs passes). */
export function checkQuantization(ctx: CheckContext): void {
  // Once per folder: a checkpoint's shards share theirs (each look is a few file-system calls).
  const byDir = new Map<string, QuantFacts | undefined>();
  const factsIn = (dir: string) => {
    if (!byDir.has(dir)) byDir.set(dir, quantFactsOf(dir));
    return byDir.get(dir);
  };
  const facts = ctx.files.map((f) => (f.header && f.abs ? factsIn(path.dirname(f.real ?? f.abs)) : undefined));
  const reported = new Set<string>();
  facts.forEach((q, i) => {
    if (!q?.refusal || reported.has(q.configFile)) return;
    reported.add(q.configFile);
    const config = path.relative(ctx.specDir, q.configFile) || q.configFile;
    report(ctx, 'quantization-unsupported', ctx.sources.files[i]!.path, `${q.refusal} (${config}; ${fileLabel(ctx, i)})`);
  });
  // Only a file with FP8 tensors or a quantization scheme can yield a problem below: the
  // per-input pass is skipped for the others (a 20 000-input spec is re-checked on every edit).
  const relevant = ctx.files.map((f, i) => !!f.header && (!!facts[i]?.scheme || hasFp8(f.header)));
  if (!relevant.includes(true)) return;
  for (const [i, input] of ctx.spec.inputs.entries()) {
    const fi = input.location.file;
    if (!relevant[fi]) continue;
    const header = ctx.files[fi]?.header;
    const info = header?.tensors.get(input.location.key);
    if (!header || !info) continue;
    const q = facts[fi];
    const key = input.location.key;
    const weight = scaledWeight(key, header, q);
    if (weight) {
      report(
        ctx,
        'quantization-scale',
        ctx.sources.inputs.at(i)!.key,
        `key "${key}" is a quantization scale of "${weight}", not a weight: prepare folds it into the dequantized "${weight}" and drops it`,
        { weight },
      );
    } else if (isInt4(q?.scheme) && /\.(qweight|qzeros|scales|g_idx)$/.test(key)) {
      report(
        ctx,
        'quantized-weight',
        ctx.sources.inputs.at(i)!.key,
        `key "${key}" is packed ${describeScheme(q!.scheme!)} data in the checkpoint's own layout: the graph needs prepare's output (the dequantized weight, or with --keep-quantized MatMulNBits' layout); run \`weight-spec prepare\` and point the spec at the prepared checkpoint`,
      );
    } else if (FP8.has(info.dtype)) {
      const scale = scaleOf(key, header);
      report(
        ctx,
        'quantized-weight',
        ctx.sources.inputs.at(i)!.key,
        `key "${key}" is stored as ${info.dtype}${scale ? ` scaled by "${scale.key}"` : ''}${q?.scheme ? ` (${describeScheme(q.scheme)})` : ''}: the graph needs it dequantized; run \`weight-spec prepare\` and point the spec at the prepared checkpoint`,
      );
    }
  }
}

/**
 * Hover lines for `key` of a checkpoint in `dir`: stored dtype, block size and the dtype it
 * dequantizes to, for FP8 weights and their scales (empty for anything else).
 */
export function describeQuantizedKey(dir: string, header: SafetensorsHeader, key: string): string[] {
  const info = header.tensors.get(key);
  if (!info) return [];
  const q = quantFactsOf(dir);
  const packed = isInt4(q?.scheme) ? /^(.+)\.(qweight|qzeros|scales|g_idx)$/.exec(key) : null;
  if (packed && header.tensors.has(`${packed[1]}.qweight`))
    return [
      `packed ${describeScheme(q!.scheme!)}: the \`${packed[2]}\` of \`${packed[1]}\` (\`${info.dtype}\` [${info.shape.join(', ')}])`,
      `\`weight-spec prepare\` dequantizes the module into \`${packed[1]}.weight\`, or with --keep-quantized repacks it for MatMulNBits`,
    ];
  const weight = scaledWeight(key, header, q);
  if (weight) return [`quantization scale of \`${weight}\` (\`${info.dtype}\`): folded into it by prepare, never a graph input`];
  if (!FP8.has(info.dtype)) return [];
  const scale = scaleOf(key, header);
  const lines = [`quantized: stored \`${info.dtype}\`${q?.scheme ? ` · ${describeScheme(q.scheme)}` : ''}`];
  if (scale) {
    const R = info.shape[info.shape.length - 2] ?? 1;
    const C = info.shape[info.shape.length - 1] ?? 1;
    const [nR, nC] = scale.shape.length >= 2 ? scale.shape.slice(-2) : [scale.shape[0] ?? 1, 1];
    const block = q?.scheme?.method === 'fp8' && q.scheme.block ? q.scheme.block : [Math.ceil(R / nR!), Math.ceil(C / nC!)];
    lines.push(`block size ${block[0]}×${block[1]} · scale \`${scale.key}\` \`${scale.dtype}\` [${scale.shape.join(', ')}]`);
  } else {
    lines.push('no scale tensor found beside it: prepare refuses it');
  }
  lines.push(`dequantized by \`weight-spec prepare\` to \`--dtype\` (model dtype: \`${q?.torchDtype ?? 'unknown'}\`)`);
  return lines;
}

/** Which source projections feed a stacked `moe_weights.<role>` tensor. */
const ROLE_SOURCES: Record<string, RegExp> = {
  gate: /\.(gate_proj|w1|gate_up_proj|input_linear)(\.weight)?$/,
  up: /\.(up_proj|w3|gate_up_proj|input_linear)(\.weight)?$/,
  down: /\.(down_proj|w2|output_linear)(\.weight)?$/,
};

/**
 * Hover lines for prepared `key` when prepare dequantized it from FP8 (a task whose transform
 * is `fp8-dequant+…`): the stored dtype and scale of its source(s), the block size (from the
 * source config when `sourceDir` is given, else the scale grid) and the dequantized dtype.
 */
export function describeFp8Origin(
  tasks: readonly { transform: string; inputs: string[]; outputs: string[] }[],
  key: string,
  info: { dtype: string; shape: number[] },
  source: (k: string) => { dtype: string; shape: number[] } | undefined,
  sourceDir?: string,
): string[] {
  const task = tasks.find((t) => t.transform.startsWith('fp8-dequant') && t.outputs.includes(key));
  if (!task) return [];
  const scheme = sourceDir ? quantFactsOf(sourceDir)?.scheme : undefined;
  const pairs = task.inputs.flatMap((k) => {
    const w = weightOfScaleKey(k, scheme?.method);
    return w && task.inputs.includes(w) ? [{ weight: w, scale: k }] : [];
  });
  // a stacked role tensor (not its `_bias`): the one pattern of prepared-keys.ts
  const stacked = MOE_WEIGHTS_KEY.exec(key);
  const m = stacked && stacked[3] === undefined ? stacked : null;
  const mine = m
    ? pairs.filter((p) => p.weight.startsWith(`${m[1]}.`) && ROLE_SOURCES[m[2]!]!.test(p.weight))
    : pairs.filter((p) => p.weight === key);
  if (mine.length === 0) return [];
  const first = mine[0]!;
  const w = source(first.weight);
  const s = source(first.scale);
  const lines = [
    `dequantized by \`weight-spec prepare\` from FP8${scheme ? ` (${describeScheme(scheme)})` : ''}${mine.length > 1 ? `: ${mine.length} expert tensors, e.g.` : ':'}`,
  ];
  lines.push(`- stored \`${first.weight}\`${w ? ` \`${w.dtype}\` [${w.shape.join(', ')}]` : ''}`);
  lines.push(`- scale \`${first.scale}\`${s ? ` \`${s.dtype}\` [${s.shape.join(', ')}]` : ''}`);
  if (w && s) {
    const R = w.shape[w.shape.length - 2] ?? 1;
    const C = w.shape[w.shape.length - 1] ?? 1;
    const grid = s.shape.length >= 2 ? s.shape.slice(-2) : [s.shape[0] ?? 1, 1];
    const block = scheme?.method === 'fp8' && scheme.block ? scheme.block : [Math.ceil(R / grid[0]!), Math.ceil(C / grid[1]!)];
    lines.push(`block size ${block[0]}×${block[1]}`);
  }
  lines.push(`dequantized dtype \`${info.dtype}\` [${info.shape.join(', ')}] (f32 product, one RNE rounding)`);
  return lines;
}
