/**
 * Checks of a spec against its companion ONNX — the weight-free graph it was exported with:
 * every spec input is a graph input, every weight-like graph input is mapped, and the
 * checkpoint tensor's shape and dtype are what the graph declares (a dtype difference is
 * what `weight-spec prepare --dtype X` fixes).
 *
 * The companion is `<stem>.onnx` beside `<stem>.weight_spec.json`; otherwise the ONNX in
 * the spec's directory that embeds a spec (`com.qti.aisw.extdata`), preferring one whose
 * embedded copy equals this spec; otherwise the only `.onnx` in the directory.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { FormatError, oneLine } from '../errors';
import type { OnnxSummary } from '../formats/onnx';
import { isStateInput } from '../artifacts/graph-interface';
import { SPEC_METADATA_KEY } from '../spec/types';
import { specMetadataValue } from '../spec/write';
import { report, type CheckContext } from './context';
import { prepareDtypeOf } from '../formats/dtype';
import { sameShape, shapeText } from './facts';
import { closestNames, didYouMean } from './suggest';

const RUNTIME_NAMES =
  /^(input_ids|position_ids|attention_mask|batch_index|token_type_ids|inputs_embeds|pixel_values|image_grid_thw|vision_embeds|deepstack_features|image_idx|input_features|encoder_hidden_states|cache_position|comp_ctx_lengths|past_(key|value)_\d+|past_key_values\..+)$/;

/**
 * Graph inputs a causal-LM graph (or a VLM's vision / language graph, Whisper's encoder / decoder) feeds at run time (never
 * weights): the named ones, the states of graph-interface.ts (`past_key.{i}`, `compressed_kv.{i}`,
 * `conv_state.{i}`, …) and the legacy exporters' cache spellings (`past_key_3`, `past_key_values.…`).
 */
export const RUNTIME_INPUT = { test: (name: string): boolean => RUNTIME_NAMES.test(name) || isStateInput(name) };

/** Finds the companion ONNX of a spec; undefined when there is none. */
export async function findCompanionOnnx(ctx: CheckContext): Promise<string | undefined> {
  let names: string[];
  try {
    names = (await readdir(ctx.specDir)).filter((n) => n.toLowerCase().endsWith('.onnx')).sort();
  } catch {
    return undefined;
  }
  if (names.length === 0) return undefined;
  const base = path.basename(ctx.specFile);
  const stem = base.replace(/(\.|^)weight_spec\.json$/i, '').replace(/\.json$/i, '');
  if (stem && names.includes(`${stem}.onnx`)) return path.join(ctx.specDir, `${stem}.onnx`);
  const embedding: string[] = [];
  // Serializing the spec costs ~10 ms per 1 000 inputs: only done when an ONNX embeds one.
  let current: string | undefined | null = null;
  for (const n of names) {
    const file = path.join(ctx.specDir, n);
    const s = await ctx.cache.onnx(file).catch(() => undefined);
    const v = s?.metadata[SPEC_METADATA_KEY];
    if (v === undefined) continue;
    if (current === null) current = safeMetadataValue(ctx);
    if (v === current) return file;
    embedding.push(file);
  }
  if (embedding.length === 1) return embedding[0];
  return names.length === 1 ? path.join(ctx.specDir, names[0]!) : undefined;
}

function safeMetadataValue(ctx: CheckContext): string | undefined {
  try {
    return specMetadataValue(ctx.spec);
  } catch {
    return undefined;
  }
}

/**
 * Runs the ONNX checks. `explicit` is a companion the *user* named (`--onnx`, relative to the
 * spec's directory): trusted like any command-line path, unlike paths written in the spec.
 */
export async function checkCompanionOnnx(
  ctx: CheckContext,
  explicit?: string,
): Promise<{ file: string; summary?: OnnxSummary } | undefined> {
  const file = explicit !== undefined ? path.resolve(ctx.specDir, explicit) : await findCompanionOnnx(ctx);
  if (!file) return undefined;
  let summary: OnnxSummary;
  try {
    summary = await ctx.cache.onnx(file);
  } catch (err) {
    const why = err instanceof FormatError ? `${err.detail}${err.byte !== undefined ? `, at byte ${err.byte}` : ''}` : oneLine(err);
    const shown = path.relative(ctx.specDir, file) || path.basename(file);
    report(ctx, 'onnx-unreadable', ['inputs'], `the companion ONNX cannot be read (${why}): ${shown}`);
    return { file };
  }
  checkAgainstSummary(ctx, file, summary);
  return { file, summary };
}

/** Names, mapping, shape and dtype of the spec's inputs against one ONNX summary. */
export function checkAgainstSummary(ctx: CheckContext, file: string, summary: OnnxSummary): void {
  const onnxName = path.relative(ctx.specDir, file) || path.basename(file);
  const graphInputs = new Map(summary.inputs.map((v) => [v.name, v]));
  const initializers = new Set(summary.initializers.map((t) => t.name));
  const specNames = new Set<string>();
  for (const [i, input] of ctx.spec.inputs.entries()) {
    specNames.add(input.name);
    const src = ctx.sources.inputs.at(i)!;
    const gi = graphInputs.get(input.name);
    if (!gi) {
      if (initializers.has(input.name)) {
        report(
          ctx,
          'name-not-in-onnx',
          src.name,
          `"${input.name}" is an initializer, not a graph input: the graph still embeds this weight (${onnxName})`,
        );
      } else {
        const suggestions = closestNames(
          input.name,
          [...graphInputs.keys()].filter((n) => !RUNTIME_INPUT.test(n)),
        );
        report(ctx, 'name-not-in-onnx', src.name, `"${input.name}" is not a graph input${didYouMean(suggestions)} (${onnxName})`, {
          suggestions,
          onnx: file,
        });
      }
      continue;
    }
    const fi = input.location.file;
    const info = fi >= 0 ? ctx.files[fi]?.header?.tensors.get(input.location.key) : undefined;
    if (!info || input.quantization) continue; // missing keys are reported; packed data differs by design
    const dims = gi.dims;
    const concrete = dims.every((d): d is number => typeof d === 'number' && d >= 0);
    if (concrete && !sameShape(dims, info.shape)) {
      report(
        ctx,
        'shape-mismatch',
        src.key,
        `shape mismatch: "${info.key}" is ${shapeText(info.shape)}, the graph input "${input.name}" is ${shapeText(dims)} (${onnxName})`,
        { expected: dims, actual: info.shape },
      );
    } else if (!concrete && dims.length !== info.shape.length) {
      report(
        ctx,
        'shape-mismatch',
        src.key,
        `rank mismatch: "${info.key}" is ${shapeText(info.shape)}, the graph input "${input.name}" has rank ${dims.length} (${onnxName})`,
      );
    }
    if (gi.dtype && gi.dtype !== info.dtype) {
      const want = prepareDtypeOf(gi.dtype);
      const dir = path.dirname(ctx.files[fi]!.abs!);
      // A warning (issue #7): the graph is right, the checkpoint needs `prepare --dtype`.
      report(
        ctx,
        'dtype-mismatch',
        src.key,
        `dtype mismatch: "${info.key}" is ${info.dtype}, the graph input "${input.name}" is ${gi.dtype}` +
          (want
            ? `; run Prepare with dtype ${want} and point the spec at the prepared checkpoint (\`weight-spec prepare --checkpoint ${path.relative(process.cwd(), dir) || '.'} --dtype ${want}\`; ${onnxName})`
            : ` (${onnxName})`),
        { expected: gi.dtype, actual: info.dtype, ...(want ? { prepareDtype: want } : {}) },
      );
    }
  }
  const unmapped = summary.inputs.map((v) => v.name).filter((n) => !specNames.has(n) && !RUNTIME_INPUT.test(n));
  for (const n of unmapped) {
    report(
      ctx,
      'onnx-input-unmapped',
      ['inputs'],
      `graph input "${n}" has no entry in the spec: the compiler cannot bind it (${onnxName})`,
      { name: n, onnx: file },
    );
  }
}
