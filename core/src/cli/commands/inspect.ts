/**
 * `weight-spec inspect <file.safetensors|file.onnx|dir>`: what a checkpoint or a graph holds,
 * from headers only (no tensor data is read). A checkpoint (file, index or directory of
 * shards) prints one row per tensor — key, dtype, shape, shard, bytes — and a total; an ONNX
 * prints its opsets, inputs, outputs, initializers and metadata. `--json` prints the same as
 * data.
 */
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { Checkpoint } from '../../formats/safetensors';
import type { OnnxSummary } from '../../formats/onnx';
import { defineCommand, println, type CliIO } from '../command';
import { formatBytes } from '../../display';
import { table } from '../table';
import { assertRegularFile } from '../../paths';
import { requireModelPath } from '../input-paths';
import { exportGraphDirs } from '../../spec/file-names';

/** One row of a checkpoint listing. */
export interface TensorRow {
  key: string;
  dtype: string;
  shape: number[];
  shard: string;
  bytes: number;
}

/** Tensors of a checkpoint in storage order (shard order, then data offset). */
export async function checkpointRows(target: string): Promise<{ files: string[]; rows: TensorRow[]; dir: string }> {
  const { storageOrder } = await import('../../view/checkpoint-page'); // loaded on use, as the ONNX modules
  const ck = await Checkpoint.open(target);
  // The checkpoint's tensors (for an index: the keys it maps), by shard then data offset.
  const rows: TensorRow[] = storageOrder(ck).map((t) => ({
    key: t.key,
    dtype: t.dtype,
    shape: t.shape,
    shard: path.relative(ck.dir, t.file) || path.basename(t.file),
    bytes: t.byteLength,
  }));
  return { files: ck.files, rows, dir: ck.dir };
}

function printCheckpoint(io: CliIO, shown: string, files: string[], rows: TensorRow[]): void {
  const total = rows.reduce((s, r) => s + r.bytes, 0);
  const lines = table(
    ['key', 'dtype', 'shape', 'shard', 'bytes'],
    rows.map((r) => [r.key, r.dtype, `[${r.shape.join(', ')}]`, r.shard, String(r.bytes)]),
    { right: [4] },
  );
  for (const l of lines) println(io.stdout, l);
  println(
    io.stdout,
    `${shown}: ${rows.length} tensor${rows.length === 1 ? '' : 's'}, ${total} bytes (${formatBytes(total)}) in ${files.length} file${files.length === 1 ? '' : 's'}`,
  );
}

const dims = (d: (number | string)[]) => `[${d.join(', ')}]`;

function clip(s: string, n: number): string {
  const flat = s.replace(/\s+/g, ' ');
  return flat.length > n ? `${flat.slice(0, n)}… (${s.length} chars)` : flat;
}

/** An ONNX summary with its serving features (CCL, on-device sampler), one line each. */
type Summary = OnnxSummary & { servingLines: string[] };

/** Summaries of `files`, each with its serving lines (the ONNX modules load here, on use). */
async function summarize(files: string[]): Promise<Summary[]> {
  const [{ summarizeOnnx }, { servingSummary }] = await Promise.all([
    import('../../formats/onnx'),
    import('../../artifacts/graph-metadata'),
  ]);
  return Promise.all(
    files.map(async (f) => {
      const s = await summarizeOnnx(f);
      const meta = Object.entries(s.metadata).map(([key, value]) => ({ key, value }));
      return { ...s, servingLines: servingSummary(s.file, s.inputs, s.outputs, meta) };
    }),
  );
}

/** The summary as `--json` prints it: plus `serving` when the graph carries CCL or a sampler. */
function onnxJson({ servingLines: lines, ...s }: Summary): OnnxSummary & { serving?: string[] } {
  return lines.length ? { ...s, serving: lines } : s;
}

function printOnnx(io: CliIO, shown: string, s: Summary, full: boolean): void {
  const opsets = s.opsets.map((o) => `${o.domain || 'ai.onnx'} ${o.version}`).join(', ');
  println(io.stdout, `${shown}: ONNX ir_version ${s.irVersion}${s.producer ? `, producer ${s.producer}` : ''}, ${s.nodeCount} nodes`);
  println(io.stdout, `opsets: ${opsets || '(none)'}`);
  const values = (title: string, vs: OnnxSummary['inputs']) => {
    println(io.stdout, `${title} (${vs.length}):`);
    for (const l of table(
      ['name', 'dtype', 'shape'],
      vs.map((v) => [v.name, v.dtype ?? `elem_type ${v.elemType}`, dims(v.dims)]),
      { indent: 2 },
    )) {
      println(io.stdout, l);
    }
  };
  values('inputs', s.inputs);
  values('outputs', s.outputs);
  for (const l of s.servingLines) println(io.stdout, l);
  const initBytes = s.initializers.reduce((a, t) => a + t.byteLength, 0);
  println(io.stdout, `initializers (${s.initializers.length}, ${initBytes} bytes):`);
  const rows = s.initializers.map((t) => [
    t.name,
    t.dtype ?? `data_type ${t.dataType}`,
    dims(t.dims),
    t.storage === 'external' && t.external ? `external ${t.external.location}@${t.external.offset}` : t.storage,
    String(t.byteLength),
  ]);
  for (const l of table(['name', 'dtype', 'shape', 'storage', 'bytes'], rows, { indent: 2, right: [4] })) println(io.stdout, l);
  const meta = Object.entries(s.metadata);
  println(io.stdout, `metadata (${meta.length}):`);
  for (const [k, v] of meta) println(io.stdout, `  ${k} = ${full ? v : clip(v, 100)}`);
}

/** The `inspect` command. */
export const inspectCommand = defineCommand({
  name: 'inspect',
  summary: 'list the tensors of a safetensors checkpoint or the interface of an ONNX file',
  synopsis: ['inspect <file.safetensors|model.safetensors.index.json|dir|file.onnx> [--json] [--full]'],
  details: [
    'Reads headers only. A directory is read as a checkpoint (index, single file or shards);',
    'one with ONNX files and no safetensors (an export directory) lists its graphs, and a VLM export',
    'directory (vlm.json + vision/ + language/) or Whisper export directory (whisper.json + encoder/ + decoder/)',
    'the graphs of both folders.',
  ],
  flags: {
    json: { type: 'boolean', description: 'print the listing as JSON' },
    full: { type: 'boolean', description: 'do not shorten long metadata values' },
    revision: { type: 'string', placeholder: '<rev>', description: 'branch, tag or commit when the path is a Hub id org/name' },
  },
  positionals: { min: 1, max: 1, names: ['path'] },
  async run(args, io) {
    const given = args.positionals[0]!;
    const target = requireModelPath(io.cwd, given, { env: io.env, revision: args.flags.revision }).path;
    const st = await stat(target);
    const isDir = st.isDirectory();
    if (!isDir) assertRegularFile(given, st);
    if (!isDir && target.toLowerCase().endsWith('.onnx')) {
      const [s] = (await summarize([target])) as [Summary];
      if (args.flags.json) println(io.stdout, JSON.stringify(onnxJson(s), null, 2));
      else printOnnx(io, given, s, args.flags.full);
      return 0;
    }
    if (isDir) {
      // An export directory (graphs, no checkpoint): show its ONNX files; a VLM export
      // (vlm.json + vision/ + language/) or a Whisper export (whisper.json + encoder/ + decoder/): the graphs of both folders.
      const names = (await readdir(target)).sort();
      const vlm = exportGraphDirs(target);
      const onnx = vlm?.length
        ? (await Promise.all(vlm.map(async ([g, d]) => (await readdir(d)).sort().map((n) => path.join(g, n))))).flat()
        : names;
      const graphs = onnx.filter((n) => n.toLowerCase().endsWith('.onnx'));
      if (graphs.length > 0 && !names.some((n) => n.endsWith('.safetensors') || n.endsWith('.safetensors.index.json'))) {
        const summaries = await summarize(graphs.map((n) => path.join(target, n)));
        if (args.flags.json) println(io.stdout, JSON.stringify(summaries.map(onnxJson), null, 2));
        else
          summaries.forEach((s, i) => {
            if (i > 0) println(io.stdout);
            printOnnx(io, path.join(given, graphs[i]!), s, args.flags.full);
          });
        return 0;
      }
    }
    const { files, rows, dir } = await checkpointRows(target);
    if (args.flags.json) {
      const totalBytes = rows.reduce((s, r) => s + r.bytes, 0);
      println(io.stdout, JSON.stringify({ kind: 'safetensors', dir, files, tensors: rows, totalBytes }, null, 2));
    } else {
      printCheckpoint(io, given, files, rows);
    }
    return 0;
  },
});
