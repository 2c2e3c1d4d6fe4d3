/**
 * Test support for the graph builder: loads fixture checkpoints (real safetensors files),
 * stacks MoE experts into the prepared layout, and drives a built graph through ONNX Runtime
 * with the weights fed as inputs — one token per call, prefill + decode, or batched slots.
 */
import * as ort from 'onnxruntime-node';
import { encodeBuiltModel, type BuiltGraph } from '../src/export/graph';
import { dequantMxfp4Reference, preparedFromInMemory } from './graph-reference-gpt-oss';
import { fromFloat32, toFloat32 } from '../src/formats/dtype';
import { Checkpoint } from '../src/formats/safetensors';

/** A float tensor in memory. */
export interface F32 {
  shape: number[];
  data: Float32Array;
}

/** Reads every tensor of the checkpoint in `dir` as float32 (bf16/f16/f32 sources), via the safetensors module. */
export async function loadCheckpoint(dir: string): Promise<Map<string, F32>> {
  const ck = await Checkpoint.open(dir);
  const out = new Map<string, F32>();
  for (const t of ck.tensors()) {
    const blocks = /^(.*)_blocks$/.exec(t.key);
    if (blocks && t.dtype === 'U8') {
      // GPT-OSS MXFP4 experts → HF's in-memory dequantized tensor (the test's own decode)
      const [E, R, G] = t.shape as [number, number, number];
      out.set(blocks[1]!, dequantMxfp4Reference(await ck.read(t.key), await ck.read(`${blocks[1]}_scales`), E, R, G));
    } else if (t.dtype !== 'U8') {
      out.set(t.key, { shape: t.shape, data: toFloat32(await ck.read(t.key), t.dtype) });
    }
  }
  return out;
}

/**
 * Mixtral/Qwen-MoE experts (and GraniteMoE's fused input_linear/output_linear) → the prepared layout (docs/ARCHITECTURE.md "Prepared layout"):
 * `<m>.moe_weights.{gate,up,down}` stacked over experts in expert order, each expert's
 * `[out, in]` weight transposed to `[in, out]` as QEfficient's `stack_expert_linears` does
 * (quic/efficient-transformers `QEfficient/transformers/moe/weights.py`, 1b7aa83):
 * gate/up `[E, H, I]`, down `[E, I, H]`. Computed here independently of prepare.
 */
export function stackExperts(w: Map<string, F32>): Map<string, F32> {
  // GPT-OSS in-memory experts (gate/up interleaved, with biases): their own split
  if ([...w.keys()].some((k) => k.endsWith('.experts.gate_up_proj_bias'))) {
    return preparedFromInMemory(w, new Set([...w.keys()].map((k) => /^model\.layers\.(\d+)\./.exec(k)?.[1]).filter(Boolean)).size);
  }
  const out = new Map<string, F32>();
  const groups = new Map<string, Map<number, Map<string, F32>>>();
  for (const [k, t] of w) {
    // GraniteMoE input_linear/output_linear and Qwen3.5-MoE experts.gate_up_proj/down_proj: [E, 2I, H] / [E, H, I]
    const fused = /^(.*)\.(input_linear|output_linear)\.weight$/.exec(k) ?? /^(.*)\.experts\.(gate_up_proj|down_proj)$/.exec(k);
    if (fused) {
      // GraniteMoE: input_linear [E, 2I, H] (gate = first I rows), output_linear [E, H, I]
      const [E, R, C] = t.shape as [number, number, number];
      const slice = (e: number, r0: number, rows: number) => ({
        shape: [rows, C],
        data: t.data.subarray((e * R + r0) * C, (e * R + r0 + rows) * C),
      });
      const roles: [string, number, number][] =
        fused[2] === 'input_linear' || fused[2] === 'gate_up_proj'
          ? [
              ['gate', 0, R / 2],
              ['up', R / 2, R / 2],
            ]
          : [['down', 0, R]];
      for (const [role, r0, rows] of roles) {
        for (let e = 0; e < E; e++) {
          const byE = groups.get(`${fused[1]}|${role}`) ?? new Map();
          groups.set(`${fused[1]}|${role}`, byE);
          byE.set(e, new Map([[role, slice(e, r0, rows)]]));
        }
      }
      continue;
    }
    const m = /^(.*)\.experts\.(\d+)\.(w1|w2|w3|gate_proj|up_proj|down_proj)\.weight$/.exec(k);
    if (!m) {
      out.set(k, t);
      continue;
    }
    const role = { w1: 'gate', gate_proj: 'gate', w3: 'up', up_proj: 'up', w2: 'down', down_proj: 'down' }[m[3]!]!;
    const byE = groups.get(`${m[1]}|${role}`) ?? new Map();
    groups.set(`${m[1]}|${role}`, byE);
    byE.set(Number(m[2]), new Map([[role, t]]));
  }
  for (const [k, byE] of groups) {
    const [mod, role] = k.split('|') as [string, string];
    const n = byE.size;
    const first = byE.get(0)!.get(role)!;
    const data = new Float32Array(n * first.data.length);
    const [rows, cols] = first.shape as [number, number];
    for (let e = 0; e < n; e++) {
      const w = byE.get(e)!.get(role)!.data;
      const base = e * rows * cols;
      for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) data[base + c * rows + r] = w[r * cols + c]!;
    }
    out.set(`${mod}.moe_weights.${role}`, { shape: [n, cols, rows], data });
  }
  return out;
}

/** Rounds weights to float16 (as prepare --dtype float16 would) and returns half bits. */
export function toHalf(t: F32): Uint16Array {
  const b = fromFloat32(t.data, 'F16');
  return new Uint16Array(b.buffer, b.byteOffset, b.length / 2);
}

/** A session over a built graph with weights bound as inputs. */
export class GraphRunner {
  private constructor(
    readonly session: ort.InferenceSession,
    readonly g: BuiltGraph,
    private readonly weights: Record<string, ort.Tensor>,
    readonly half: boolean,
  ) {}

  /** Opens `g` with `weights` (keys = graph input names). */
  static async open(g: BuiltGraph, weights: Map<string, F32>, half = false): Promise<GraphRunner> {
    const session = await ort.InferenceSession.create(encodeBuiltModel(g.model));
    const feeds: Record<string, ort.Tensor> = {};
    for (const w of g.weights) {
      // inputs are named by parameter path; a GPT-2 checkpoint saved from GPT2Model lacks `transformer.`
      const t = weights.get(w.name) ?? weights.get(w.name.replace(/^transformer\./, ''));
      if (!t) throw new Error(`checkpoint lacks ${w.name}`);
      if (JSON.stringify(t.shape) !== JSON.stringify(w.shape)) throw new Error(`${w.name}: shape ${t.shape} != ${w.shape}`);
      feeds[w.name] = half ? new ort.Tensor('float16', toHalf(t), t.shape) : new ort.Tensor('float32', t.data, t.shape);
    }
    return new GraphRunner(session, g, feeds, half);
  }

  /** The graph's state inputs in order: past_key/past_value per layer, conv_state/recurrent_state per linear-attention layer. */
  get stateInputs() {
    return this.g.model.graph.input.filter((v) => /^(past_key|past_value|conv_state|recurrent_state)\.\d+$/.test(v.name));
  }

  /** A zeroed cache: each state input with batch `batch` (KV caches `[batch, nKv, ctx, hd]`, linear-attention states as declared). */
  emptyCache(batch: number, nKv: number, ctx: number, hd: number): ort.Tensor[] {
    return this.stateInputs.map((v) => {
      const declared = v.type.tensorType.shape.dim.map((d) => ('dimValue' in d ? d.dimValue : 0));
      const dims = v.name.startsWith('past_') ? [batch, nKv, ctx, hd] : [batch, ...declared.slice(1)];
      const n = dims.reduce((x, y) => x * y, 1);
      return v.type.tensorType.elemType === 10
        ? new ort.Tensor('float16', new Uint16Array(n), dims)
        : new ort.Tensor('float32', new Float32Array(n), dims);
    });
  }

  /** One call: ids/positions `[B][S]`; returns logits `[B][V]` and the new cache. */
  async step(
    ids: number[][],
    pos: number[][],
    cache: ort.Tensor[],
    batchIndex?: number[],
  ): Promise<{ logits: number[][]; cache: ort.Tensor[] }> {
    const B = ids.length;
    const S = ids[0]!.length;
    const feeds: Record<string, ort.Tensor> = { ...this.weights };
    feeds.input_ids = new ort.Tensor('int64', BigInt64Array.from(ids.flat().map(BigInt)), [B, S]);
    feeds.position_ids = new ort.Tensor('int64', BigInt64Array.from(pos.flat().map(BigInt)), [B, S]);
    if (batchIndex) feeds.batch_index = new ort.Tensor('int64', BigInt64Array.from(batchIndex.map(BigInt)), [B, 1]);
    this.stateInputs.forEach((v, i) => (feeds[v.name] = cache[i]!));
    const r = await this.session.run(feeds);
    const lg = r.logits!;
    const V = lg.dims[2]!;
    const data = lg.data as Float32Array;
    const logits = Array.from({ length: B }, (_, b) => Array.from(data.subarray(b * V, (b + 1) * V)));
    const next: ort.Tensor[] = [];
    for (const v of this.stateInputs) next.push(r[`${v.name}_RetainedState`]!);
    return { logits, cache: next };
  }

  /** Logits for every position of `ids`, feeding one token per call through the cache. */
  async tokenByToken(ids: number[], cache: ort.Tensor[], start = 0): Promise<{ rows: number[][]; cache: ort.Tensor[] }> {
    const rows: number[][] = [];
    for (let t = 0; t < ids.length; t++) {
      const r = await this.step([[ids[t]!]], [[start + t]], cache);
      rows.push(r.logits[0]!);
      cache = r.cache;
    }
    return { rows, cache };
  }
}

/** max |a − b| over two row sets of equal shape. */
export function maxAbsDiff(a: number[][], b: number[][]): number {
  if (a.length !== b.length) throw new Error(`row count ${a.length} != ${b.length}`);
  let m = 0;
  a.forEach((row, i) => {
    if (row.length !== b[i]!.length) throw new Error(`row ${i}: ${row.length} != ${b[i]!.length}`);
    row.forEach((v, j) => (m = Math.max(m, Math.abs(v - b[i]![j]!))));
  });
  return m;
}

/** Index of the largest value. */
export function argmax(row: number[]): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i]! > row[best]!) best = i;
  return best;
}
