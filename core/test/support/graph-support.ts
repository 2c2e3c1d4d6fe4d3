/**
 * Test support for the graph builder: loads fixture checkpoints (real safetensors files),
 * stacks MoE experts into the prepared layout, and drives a built graph through ONNX Runtime
 * with the weights fed as inputs — one token per call, prefill + decode, or batched slots.
 */
import * as ort from 'onnxruntime-node';
import { encodeBuiltModel, type BuiltGraph } from '../../src/export/exporter';
import { dequantMxfp4Reference, preparedFromInMemory } from './graph-reference-gpt-oss';
import { fromFloat32, toFloat32 } from '../../src/formats/float-convert';
import { encodeModel, makeNode, makeTensor, makeValueInfo } from '../../src/formats/onnx';
import { Checkpoint } from '../../src/formats/safetensors';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { e4m3 } from './fp8-support';

/** Block-scaled e4m3 → float32, edge blocks partial (the test's own decode, from fp8-support.ts's e4m3). */
function dequantFp8Reference(q: Uint8Array, shape: number[], scale: Float32Array, [bR, bC]: [number, number]): F32 {
  const [R, C] = shape as [number, number];
  const sC = Math.ceil(C / bC);
  const data = new Float32Array(R * C);
  for (let i = 0; i < R; i++)
    for (let j = 0; j < C; j++) data[i * C + j] = Math.fround(e4m3(q[i * C + j]!) * scale[Math.floor(i / bR) * sC + Math.floor(j / bC)]!);
  return { shape, data };
}

/** A float tensor in memory. */
export interface F32 {
  shape: number[];
  data: Float32Array;
}

/** Reads every tensor of the checkpoint in `dir` as float32 (bf16/f16/f32 sources), via the safetensors module. */
export async function loadCheckpoint(dir: string): Promise<Map<string, F32>> {
  const ck = await Checkpoint.open(dir);
  const out = new Map<string, F32>();
  const cfg = existsSync(path.join(dir, 'config.json')) ? JSON.parse(readFileSync(path.join(dir, 'config.json'), 'utf8')) : {};
  const block = cfg.quantization_config?.weight_block_size as [number, number] | undefined;
  for (const t of ck.tensors()) {
    if (t.dtype === 'F8_E4M3') {
      // DeepSeek-V3's block-scaled FP8 (fp8-support.ts): f32(e4m3) · weight_scale_inv[⌊i/bR⌋, ⌊j/bC⌋]
      const sKey = `${t.key}_scale_inv`;
      const sDtype = [...ck.tensors()].find((x) => x.key === sKey)!.dtype;
      out.set(t.key, dequantFp8Reference(await ck.read(t.key), t.shape, toFloat32(await ck.read(sKey), sDtype), block!));
      continue;
    }
    if (t.key.endsWith('_scale_inv')) continue;
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
    // GraniteMoE input_linear/output_linear and Qwen3.5-MoE mlp.experts.gate_up_proj/down_proj: [E, 2I, H] / [E, H, I]
    // (Llama 4's feed_forward.experts.* are [E, H, 2I] / [E, I, H]: below)
    const fused = /^(.*)\.(input_linear|output_linear)\.weight$/.exec(k) ?? /^(.*\.mlp)\.experts\.(gate_up_proj|down_proj)$/.exec(k);
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
    const bmm = /^(.*)\.experts\.(gate_up_proj|down_proj)$/.exec(k);
    if (bmm) {
      // Llama 4: gate_up_proj [E, H, 2I] (gate = first I columns), down_proj [E, I, H]: canonical per expert already
      if (bmm[2] === 'down_proj') out.set(`${bmm[1]}.moe_weights.down`, t);
      else {
        const [E, H, twoI] = t.shape as [number, number, number];
        const I = twoI / 2;
        for (const [role, c0] of [
          ['gate', 0],
          ['up', I],
        ] as const) {
          const data = new Float32Array(E * H * I);
          for (let e = 0; e < E; e++)
            for (let h = 0; h < H; h++) for (let i = 0; i < I; i++) data[(e * H + h) * I + i] = t.data[(e * H + h) * twoI + c0 + i]!;
          out.set(`${bmm[1]}.moe_weights.${role}`, { shape: [E, H, I], data });
        }
      }
      continue;
    }
    const m = /^(.*)\.experts\.(\d+)\.(w1|w2|w3|gate_proj|up_proj|down_proj|linear|linear_v|linear_1)\.weight$/.exec(k);
    if (!m) {
      out.set(k, t);
      continue;
    }
    const role = {
      w1: 'gate',
      gate_proj: 'gate',
      linear: 'gate',
      w3: 'up',
      up_proj: 'up',
      linear_v: 'up',
      w2: 'down',
      down_proj: 'down',
      linear_1: 'down',
    }[m[3]!]!;
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

  /** The graph's state inputs in order (per layer: key then value whatever the cache form names them; conv/recurrent states of linear-attention layers). */
  get stateInputs() {
    return this.g.model.graph.input.filter((v) =>
      /^(past_key|past_value|compressed_kv|k_pe|conv_state|recurrent_state)\.\d+$/.test(v.name),
    );
  }

  /**
   * A zeroed cache: one tensor per state input. KV-like caches are `[batch, nKv, ctx, hd]`, except
   * where the graph declares a cache input's heads and head dim (MLA: value dim ≠ key dim; the
   * compressed cache: one head of kv_lora_rank / rope); linear-attention states are as declared.
   */
  emptyCache(batch: number, nKv: number, ctx: number, hd: number): ort.Tensor[] {
    return this.stateInputs.map((v) => {
      const declared = v.type.tensorType.shape.dim.map((d) =>
        typeof (d as { dimValue?: number }).dimValue === 'number' ? (d as { dimValue: number }).dimValue : undefined,
      );
      const shape = /^(conv_state|recurrent_state)\./.test(v.name)
        ? [batch, ...declared.slice(1).map((d) => d ?? 0)]
        : [batch, declared[1] ?? nKv, ctx, declared[3] ?? hd];
      const n = shape.reduce((x, y) => x * y, 1);
      return v.type.tensorType.elemType === 10
        ? new ort.Tensor('float16', new Uint16Array(n), shape)
        : new ort.Tensor('float32', new Float32Array(n), shape);
    });
  }

  /** The graph's state input names in order. */
  cacheNames(): string[] {
    return this.stateInputs.map((v) => v.name);
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
    const names = this.cacheNames();
    names.forEach((n, k) => (feeds[n] = cache[k]!));
    const r = await this.session.run(feeds);
    const lg = r.logits!;
    const V = lg.dims[2]!;
    const data = lg.data as Float32Array;
    const logits = Array.from({ length: B }, (_, b) => Array.from(data.subarray(b * V, (b + 1) * V)));
    const next = names.map((n) => r[`${n}_RetainedState`]!);
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

/**
 * A legacy-style ONNX graph (IR 8, opset 17) holding `inits` as initializers and returning each
 * unchanged through an Identity node as `out<i>`: after export --onnx binds them to a
 * checkpoint, its outputs are what the bound weights read.
 */
export function identityGraph(inits: [string, F32][]): Uint8Array {
  return encodeModel({
    irVersion: 8,
    opsetImport: [{ domain: '', version: 17 }],
    graph: {
      name: 'g',
      node: inits.map(([n], i) => makeNode('Identity', [n], [`out${i}`])),
      initializer: inits.map(([n, t]) => makeTensor(n, 'F32', t.shape, new Uint8Array(t.data.buffer))),
      input: [],
      output: inits.map(([, t], i) => makeValueInfo(`out${i}`, 'F32', t.shape)),
    },
  });
}
