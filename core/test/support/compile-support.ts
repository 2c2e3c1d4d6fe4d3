/**
 * Test data for the compile/run tests, made in code from a fixture's legacy.onnx: the graph
 * with every initializer turned into a graph input (a weight-free graph), a "prepared"
 * directory holding those initializers' bytes in safetensors shards, and a v5
 * weight_spec.json mapping each input to its tensor. The export directory reaches the
 * prepared directory through a symlink, as in QEfficient's layout.
 */
import fs from 'node:fs';
import path from 'node:path';
import { scanFields, parseWireModel } from '../../src/formats/onnx/wire-model';
import { WireWriter } from '../../src/formats/onnx/wire-writer';
import { type DType } from '../../src/formats/dtype';
import { convertFloat } from '../../src/formats/float-convert';
import { writeSpecText, type WeightSpec } from '../../src/spec';

/**
 * Makes `dir` a prepared checkpoint as prepare leaves one (compile binds and writes only
 * there): a manifest in prepare's format listing its safetensors files with their sizes (no
 * source files, so it never turns stale) and, last, the sentinel holding the fingerprint.
 */
export function markPrepared(dir: string): void {
  const fingerprint = 'cd'.repeat(32);
  const output_files = fs
    .readdirSync(dir)
    .filter((n) => n.endsWith('.safetensors'))
    .sort()
    .map((n) => ({ path: n, size: fs.statSync(path.join(dir, n)).size }));
  fs.writeFileSync(
    path.join(dir, '.checkpoint_prepared.json'),
    JSON.stringify({
      version: 1,
      tool: 'weight-spec',
      source: dir,
      target_dtype: 'float32',
      fingerprint,
      moe_prefill_flavour: null,
      expert_parallel: null,
      source_files: [],
      transforms: [],
      tasks: [],
      output_files,
      sidecars: [],
      created_at: new Date(0).toISOString(),
    }),
  );
  fs.writeFileSync(path.join(dir, '.checkpoint_prepared'), fingerprint);
}

/** One initializer of a legacy model. */
export interface LegacyTensor {
  name: string;
  dataType: number;
  dims: number[];
  raw: Uint8Array;
}

/** Reads every initializer (torch.onnx.export stores them as raw_data). */
export function legacyInitializers(bytes: Uint8Array): LegacyTensor[] {
  const m = parseWireModel(bytes, 'legacy.onnx');
  const out: LegacyTensor[] = [];
  for (const g of m.graphFields) {
    if (g.field !== 5 || g.wire !== 2) continue;
    const t: LegacyTensor = { name: '', dataType: 0, dims: [], raw: new Uint8Array() };
    for (const f of scanFields(bytes, g.vStart, g.vEnd, 'legacy.onnx')) {
      if (f.field === 1 && f.wire === 0) t.dims.push(f.int!);
      else if (f.field === 2) t.dataType = f.int!;
      else if (f.field === 8) t.name = Buffer.from(bytes.subarray(f.vStart, f.vEnd)).toString('utf8');
      // A real copy (Buffer#slice would share memory and keep an unaligned offset).
      else if (f.field === 9) t.raw = new Uint8Array(bytes.subarray(f.vStart, f.vEnd));
      else throw new Error(`initializer field ${f.field} not handled by the test helper`);
    }
    out.push(t);
  }
  return out;
}

function valueInfo(name: string, elemType: number, dims: (number | string)[]): Uint8Array {
  const shape = new WireWriter();
  for (const d of dims)
    shape.bytes(1, typeof d === 'number' ? new WireWriter().int(1, d).finish() : new WireWriter().string(2, d).finish());
  const tensorType = new WireWriter().int(1, elemType).bytes(2, shape.finish()).finish();
  return new WireWriter().string(1, name).bytes(2, new WireWriter().bytes(1, tensorType).finish()).finish();
}

/** The legacy graph with its initializers replaced by graph inputs of the same name, type and shape. */
export function weightFreeGraph(bytes: Uint8Array, inits: LegacyTensor[], inputType?: (t: LegacyTensor) => number): Uint8Array {
  const m = parseWireModel(bytes, 'legacy.onnx');
  const g = new WireWriter();
  for (const f of m.graphFields) if (!(f.field === 5 && f.wire === 2)) g.raw(bytes.subarray(f.start, f.end));
  for (const t of inits) g.bytes(11, valueInfo(t.name, inputType ? inputType(t) : t.dataType, t.dims));
  const w = new WireWriter();
  for (const f of m.fields) {
    if (f === m.graph) w.bytes(7, g.finish());
    else w.raw(bytes.subarray(f.start, f.end));
  }
  return w.finish();
}

/** Writes a safetensors file (header padded to 8 bytes); returns the data start. */
export function writeSafetensorsFile(file: string, tensors: { key: string; dtype: DType; shape: number[]; data: Uint8Array }[]): number {
  const header: Record<string, unknown> = {};
  let off = 0;
  for (const t of tensors) {
    header[t.key] = { dtype: t.dtype, shape: t.shape, data_offsets: [off, off + t.data.length] };
    off += t.data.length;
  }
  let h = Buffer.from(JSON.stringify(header));
  h = Buffer.concat([h, Buffer.alloc((8 - (h.length % 8)) % 8, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(h.length));
  fs.writeFileSync(file, Buffer.concat([len, h, ...tensors.map((t) => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength))]));
  return 8 + h.length;
}

/** A made export: directories and what went into them. */
export interface MadeExport {
  root: string;
  exportDir: string;
  preparedDir: string;
  specPath: string;
  inits: LegacyTensor[];
  weightBytes: number;
}

/**
 * Builds `<root>/export` (model.onnx, weight_spec.json, symlink `prepared` → `<root>/prepared`)
 * and `<root>/prepared` (two shards `base-0000/0001.safetensors` in `dtype`).
 */
export function makeLegacyExport(legacyOnnx: string, root: string, dtype: DType = 'F32', name = 'tiny'): MadeExport {
  const bytes = fs.readFileSync(legacyOnnx);
  const inits = legacyInitializers(bytes);
  const exportDir = path.join(root, 'export');
  const preparedDir = path.join(root, 'prepared');
  fs.mkdirSync(exportDir, { recursive: true });
  fs.mkdirSync(preparedDir, { recursive: true });
  const half = Math.ceil(inits.length / 2);
  const shards = [inits.slice(0, half), inits.slice(half)];
  let weightBytes = 0;
  shards.forEach((part, i) => {
    const tensors = part.map((t) => {
      if (t.dataType !== 1) throw new Error(`${t.name}: test helper expects float32 initializers`);
      const data = dtype === 'F32' ? t.raw : convertFloat(t.raw, 'F32', dtype);
      weightBytes += data.length;
      return { key: `w.${t.name}`, dtype, shape: t.dims, data };
    });
    writeSafetensorsFile(path.join(preparedDir, `base-000${i}.safetensors`), tensors);
  });
  markPrepared(preparedDir);
  fs.symlinkSync(preparedDir, path.join(exportDir, 'prepared'));
  fs.writeFileSync(path.join(exportDir, 'model.onnx'), weightFreeGraph(bytes, inits));
  const spec: WeightSpec = {
    version: 5,
    files: shards.map((_, i) => ({ format: 'safetensors', path: `prepared/base-000${i}.safetensors` })),
    inputs: inits.map((t, k) => ({ name: t.name, location: { file: k < half ? 0 : 1, key: `w.${t.name}` } })),
    model_id: preparedDir,
    model_name: name,
  };
  const specPath = path.join(exportDir, 'weight_spec.json');
  fs.writeFileSync(specPath, writeSpecText(spec));
  return { root, exportDir, preparedDir, specPath, inits, weightBytes };
}

/** reference.json of a fixture family. */
export interface Reference {
  input_ids: number[];
  generated_ids: number[];
  logits: number[][];
}

/** Largest |a - b| over two logit matrices of the same shape (throws on a shape mismatch). */
export function maxAbsDiff(a: number[][], b: number[][]): number {
  if (a.length !== b.length) throw new Error(`row count ${a.length} vs ${b.length}`);
  let m = 0;
  a.forEach((row, i) => {
    if (row.length !== b[i]!.length) throw new Error(`row ${i}: ${row.length} vs ${b[i]!.length} columns`);
    row.forEach((v, j) => (m = Math.max(m, Math.abs(v - b[i]![j]!))));
  });
  return m;
}

/** A synthetic export: `logits = Gemm(…Gemm(Gather(embed, ids), w0ᵀ)…, w{L-1}ᵀ)` with f32 weights (hidden = "vocab" of the output). */
export interface SyntheticExport {
  exportDir: string;
  preparedDir: string;
  weights: Map<string, { shape: number[]; data: Float32Array }>;
  weightBytes: number;
  /** The graph's output for `ids`, computed here in float64. */
  expected(ids: number[]): number[][];
}

/** Builds a weight-free synthetic graph + prepared dir (one shard) + spec under `root`. */
export function makeSyntheticExport(root: string, hidden = 256, vocab = 2000, layers = 4): SyntheticExport {
  const exportDir = path.join(root, 'export');
  const preparedDir = path.join(root, 'prepared');
  fs.mkdirSync(exportDir, { recursive: true });
  fs.mkdirSync(preparedDir, { recursive: true });
  let seed = 12345;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648 - 0.5) * 0.2;
  const weights = new Map<string, { shape: number[]; data: Float32Array }>();
  const mk = (name: string, shape: number[]) => {
    const data = new Float32Array(shape[0]! * shape[1]!);
    for (let i = 0; i < data.length; i++) data[i] = rnd();
    weights.set(name, { shape, data });
  };
  mk('model.embed.weight', [vocab, hidden]);
  for (let i = 0; i < layers; i++) mk(`model.layers.${i}.proj.weight`, [hidden, hidden]);
  // opset 11: Unsqueeze still takes `axes` as an attribute, so the graph needs no constants.
  const node = (op: string, ins: string[], out: string, attrs: [string, number | number[]][] = []) => {
    const n = new WireWriter();
    for (const i of ins) n.string(1, i);
    n.string(2, out).string(4, op);
    for (const [k, v] of attrs) {
      const a = new WireWriter().string(1, k);
      if (Array.isArray(v)) {
        for (const x of v) a.int(8, x);
        a.int(20, 7);
      } else a.int(3, v).int(20, 2);
      n.bytes(5, a.finish());
    }
    return n.finish();
  };
  const g = new WireWriter();
  g.bytes(1, node('Gather', ['model.embed.weight', 'input_ids'], 'e'));
  g.bytes(1, node('Flatten', ['e'], 'x0', [['axis', 2]]));
  for (let i = 0; i < layers; i++) g.bytes(1, node('Gemm', [`x${i}`, `model.layers.${i}.proj.weight`], `x${i + 1}`, [['transB', 1]]));
  g.bytes(1, node('Unsqueeze', [`x${layers}`], 'logits', [['axes', [0]]]));
  g.string(2, 'synthetic');
  g.bytes(11, valueInfo('input_ids', 7, [1, 'seq']));
  for (const [name, w] of weights) g.bytes(11, valueInfo(name, 1, w.shape));
  g.bytes(12, valueInfo('logits', 1, [1, 'seq', hidden]));
  const model = new WireWriter().int(1, 7).bytes(8, new WireWriter().string(1, '').int(2, 11).finish()).bytes(7, g.finish()).finish();
  fs.writeFileSync(path.join(exportDir, 'model.onnx'), model);
  const tensors = [...weights].map(([key, w]) => ({ key, dtype: 'F32' as DType, shape: w.shape, data: new Uint8Array(w.data.buffer) }));
  writeSafetensorsFile(path.join(preparedDir, 'base-0000.safetensors'), tensors);
  markPrepared(preparedDir);
  fs.symlinkSync(preparedDir, path.join(exportDir, 'prepared'));
  const spec: WeightSpec = {
    version: 5,
    files: [{ format: 'safetensors', path: 'prepared/base-0000.safetensors' }],
    inputs: [...weights.keys()].map((k) => ({ name: k, location: { file: 0, key: k } })),
    model_id: preparedDir,
    model_name: 'synthetic',
  };
  fs.writeFileSync(path.join(exportDir, 'weight_spec.json'), writeSpecText(spec));
  const expected = (ids: number[]) =>
    ids.map((id) => {
      const e = weights.get('model.embed.weight')!.data;
      let x = Array.from(e.subarray(id * hidden, (id + 1) * hidden));
      for (let i = 0; i < layers; i++) {
        const w = weights.get(`model.layers.${i}.proj.weight`)!.data;
        x = Array.from({ length: hidden }, (_, o) => x.reduce((s, v, k) => s + v * w[o * hidden + k]!, 0));
      }
      return x;
    });
  return { exportDir, preparedDir, weights, weightBytes: tensors.reduce((s, t) => s + t.data.length, 0), expected };
}

/**
 * The demo's tiny Llama written, exported (ctx_len 32) and prepared to float32 under `root`;
 * returns the export folder. The CLI and the model writer are imported when called, so a test
 * that wraps modules with `vi.mock` (compile-visits) loads them through its wrappers.
 */
export async function tinyExportPrepared(root: string): Promise<string> {
  const { writeTinyLlama } = await import('../../src/demo/tiny-model');
  const { cliInProcess } = await import('../../../test/support/cli');
  const model = path.join(root, 'tiny');
  const exp = path.join(root, 'tiny-export');
  await writeTinyLlama(model);
  for (const args of [
    ['export', '--config', model, '--out', exp, '--ctx-len', '32'],
    ['prepare', '--checkpoint', model, '--dtype', 'float32'],
  ]) {
    const r = await cliInProcess(args);
    if (r.code !== 0) throw new Error(`weight-spec ${args[0]} exited ${r.code}: ${r.stderr}`);
  }
  return exp;
}
