/**
 * Hover: on a key — dtype, shape, bytes, shard file, byte range and the ONNX input/ops that
 * use it; on a name — the graph input's dtype/shape; on a file path — size, tensor count and
 * header metadata. Everything comes from the facts the last check read. Where the companion
 * ONNX carries CCL or the on-device sampler, the ONNX lines say so.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Hover } from 'vscode-languageserver/node';
import type { TextDocument } from 'vscode-languageserver-textdocument';
import { describePlannedOrigin, describePreparedOrigin, describeQuantizedKey, PREPARE_HINT, type CheckRun } from '../../core/src/check';
import { servingSummary } from '../../core/src/artifacts/graph-metadata';
import { formatBytes } from '../../core/src/display';
import { hubLabelOf } from '../../core/src/hub/hf-cache';
import { tensorLinkTarget } from './definition';
import { rangeOf } from './diagnostics';
import { graphInput, shapeText, targetAt, tensorOf } from './spec-target';

const n = (x: number) => x.toLocaleString('en-US');

/** core's formatBytes, with the exact count when it is rounded. */
function bytesText(b: number): string {
  return b < 1024 ? formatBytes(b) : `${formatBytes(b)} (${n(b)} bytes)`;
}

function onnxLines(run: CheckRun, name: string): string[] {
  const s = run.onnx?.summary;
  if (!s) return [];
  const onnxName = path.basename(run.onnx!.file);
  const gi = graphInput(run, name);
  if (!gi) return [`ONNX: \`${name}\` is not a graph input (\`${onnxName}\`)`];
  const ops = s.consumers[name] ?? [];
  // each op links to the graph (the ONNX file: the extension opens it in its graph viewer)
  const onnxUri = pathToFileURL(run.onnx!.file).toString();
  return [
    `ONNX input \`${name}\` of \`${onnxName}\`: \`${gi.dtype ?? `type ${gi.elemType}`}\` \`${shapeText(gi.dims)}\``,
    ops.length ? `used by: ${ops.map((o) => `[\`${o}\`](${onnxUri})`).join(', ')}` : 'used by no node of the main graph',
    // QEfficient's serving features the graph carries (CCL, on-device sampler)
    ...servingSummary(
      onnxName,
      s.inputs,
      s.outputs,
      Object.entries(s.metadata).map(([key, value]) => ({ key, value })),
    ).map((l) => `\`${onnxName}\` serves with ${l}`),
  ];
}

/** What a key hover says when no header holds the key: only mention a diagnostic that exists. */
function missingKeyText(run: CheckRun, file: number): string {
  const st = run.files[file];
  if (st?.missingPrepared)
    return `not prepared yet: the prepared checkpoint does not exist, and its source checkpoint could not be read to check this key; ${PREPARE_HINT}`;
  if (!st?.header) return 'its file is not readable (see the diagnostic on `files`)';
  return 'not found in the checkpoint (see the diagnostic)';
}

/** The hover for `offset` of `doc`, or null. */
export function hoverAt(doc: TextDocument, run: CheckRun, offset: number, tensorLinks = false): Hover | null {
  const t = targetAt(run, offset);
  const spec = run.parsed.spec;
  if (!t || !spec) return null;
  const lines: string[] = [];
  if (t.kind === 'key') {
    const input = spec.inputs[t.input]!;
    const hit = tensorOf(run, t.input);
    lines.push(`**\`${input.location.key}\`**`);
    const planned = hit ? run.files[hit.file]!.planned : undefined;
    if (hit && planned) {
      const { info, file } = hit;
      lines.push(
        `dtype \`${info.dtype}\` · shape \`${shapeText(info.shape)}\` · ${bytesText(info.byteLength)}`,
        `planned for shard \`${path.basename(run.files[file]!.abs!)}\` (files[${file}]): prepare has not written it yet`,
        `from the plan of \`weight-spec prepare --checkpoint ${planned.checkpoint} --dtype ${planned.dtype}\``,
        ...describePlannedOrigin(planned, info.key, info),
      );
    } else if (hit) {
      const { info, file } = hit;
      const abs = run.files[file]!.abs!;
      lines.push(
        `dtype \`${info.dtype}\` · shape \`${shapeText(info.shape)}\` · ${bytesText(info.byteLength)}`,
        `shard [\`${path.basename(abs)}\`](${tensorLinkTarget(abs, info.key, tensorLinks)}) (files[${file}]: \`${spec.files[file]!.path}\`)${hubLabelOf(abs) ? ` of \`${hubLabelOf(abs)}\`` : ''}`,
        `bytes ${n(info.dataOffset)}–${n(info.dataOffset + info.byteLength)} of the file (data_offsets ${info.begin}–${info.end})`,
        ...describeQuantizedKey(path.dirname(run.files[file]!.real ?? abs), run.files[file]!.header!, info.key),
        ...describePreparedOrigin(path.dirname(run.files[file]!.real ?? abs), info.key, info),
      );
    } else {
      lines.push(missingKeyText(run, input.location.file));
    }
    lines.push(...onnxLines(run, input.name));
  } else if (t.kind === 'name') {
    const input = spec.inputs[t.input]!;
    lines.push(`**\`${input.name}\`** (graph input)`);
    if (run.onnx?.summary) lines.push(...onnxLines(run, input.name));
    else lines.push(run.onnx ? `companion ONNX \`${path.basename(run.onnx.file)}\` is unreadable` : 'no companion ONNX beside the spec');
    const hit = tensorOf(run, t.input);
    if (hit) lines.push(`weights: \`${hit.info.key}\` \`${hit.info.dtype}\` \`${shapeText(hit.info.shape)}\``);
  } else {
    const f = spec.files[t.file]!;
    const st = run.files[t.file];
    lines.push(`**\`${f.path}\`** (${f.format})`);
    // a file of the Hugging Face cache is shown by model id and revision, not by its blob's hash path
    const hub = st?.abs ? hubLabelOf(st.abs) : undefined;
    if (hub) lines.push(`Hugging Face cache: \`${hub}\``);
    else if (st?.abs) lines.push(`resolved: \`${st.abs}\``);
    if (st?.real && !hub) lines.push(`through a symlink to: \`${st.real}\`${hubLabelOf(st.real) ? ` (${hubLabelOf(st.real)})` : ''}`);
    const h = st?.header;
    if (h && st?.planned) {
      lines.push(`not written yet: prepare will write ${n(h.tensors.size)} tensors here (planned from \`${st.planned.checkpoint}\`)`);
    } else if (h) {
      lines.push(`${bytesText(h.fileSize)} · ${n(h.tensors.size)} tensors · header ${n(h.headerLength)} bytes`);
      const meta = Object.entries(h.metadata ?? {});
      if (meta.length) {
        lines.push('metadata:');
        for (const [k, v] of meta.slice(0, 12)) lines.push(`- \`${k}\`: ${v.length > 80 ? `${v.slice(0, 80)}…` : v}`);
        if (meta.length > 12) lines.push(`- … ${meta.length - 12} more`);
      }
    } else {
      lines.push(
        st?.missingPrepared ? `not prepared yet: this shard does not exist; ${PREPARE_HINT}` : 'not readable (see the diagnostic)',
      );
    }
  }
  return { contents: { kind: 'markdown', value: lines.join('\n\n') }, range: rangeOf(doc, t.range) };
}
