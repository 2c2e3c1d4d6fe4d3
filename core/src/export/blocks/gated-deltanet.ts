/**
 * Qwen3.5's Gated DeltaNet linear-attention layer (HF `Qwen3_5MoeGatedDeltaNet`,
 * huggingface/transformers `src/transformers/models/qwen3_5_moe/modeling_qwen3_5_moe.py`) with
 * QEfficient's retained states (`QEffQwen3_5MoeGatedDeltaNet`, quic/efficient-transformers
 * `QEfficient/transformers/models/qwen3_5_moe/modeling_qwen3_5_moe.py`):
 *
 *   in_proj_qkv → [q | k | v] (each contiguous) → causal depthwise conv over the last K inputs
 *   (conv_state) and the new ones → SiLU → q, k L2-normalised (eps 1e-6), q · dk^-0.5, key head
 *   j // (nv/nk) shared by value head j → the delta rule over recurrent_state `[nv, dk, dv]` with
 *   decay g = −exp(A_log)·softplus(a + dt_bias) and beta = sigmoid(b) → gated RMSNorm (plain w,
 *   then · silu(z)) per value head → out_proj.
 *
 * States per layer: `conv_state.{i}` `[batch, nk, conv_dim / nk, K]` (the last K in_proj_qkv
 * outputs before the conv, model dtype — a reshape of HF's `[batch, conv_dim, K]`) and
 * `recurrent_state.{i}` `[batch, nv, dk, dv]` in float32 (HF runs the delta rule in float32
 * whatever the model dtype). A row whose positions include 0 starts from zero states; padded
 * positions (−1, trailing, as QEfficient and the runner pad) change neither state: their k and
 * decay are zeroed, so S·exp(0) + 0 = S, and the conv state ends at the last valid input.
 *
 * Prefill: the chunked delta rule of HF's `torch_chunk_gated_delta_rule` (chunk 64, as
 * QEfficient). Within a chunk the unit lower-triangular system HF solves row by row is
 * (I − N)⁻¹ with N strictly lower triangular, so N⁶⁴ = 0 and (I − N)⁻¹ = Σ_{m<64} Nᵐ =
 * ∏_{j<6} (I + N^(2^j)) exactly — six squarings instead of QEfficient's K = 32 product, which
 * drops N³²…N⁶³ and so is exact only for chunks ≤ 32. The chunks follow each other through the
 * state in an ONNX `Loop` (opset 17, run by ONNX Runtime); everything that does not need the
 * state is computed for all chunks at once before it. Decode (one token): HF's
 * `torch_recurrent_gated_delta_rule` step. A graph with a symbolic seq_len picks between them
 * with an `If` on seq_len = 1, so a decode step never pays for a padded 64-token chunk; a
 * `--phase decode` graph (seq_len fixed at 1) holds the step only.
 */
import { convDim, type GatedDeltaNetSpec, type LinearSpec } from './arch';
import type { CacheContext } from './attention-block';
import type { Dim } from './builder';
import type { StateDecl } from '../../artifacts/graph-interface';
import type { AttentionBlock } from './attention-block';
import type { Phase } from '../../artifacts/graph-interface';
import { cast, linear, reshape, split, transpose, unsqueeze, weight, type Ctx } from './ops';
import { TensorDataType } from '../../formats/onnx/types';

/** QEfficient's chunk length. */
const CHUNK = 64;

/**
 * The layer's states for the graph interface (graph-interface.ts): conv_state `[batch, nk,
 * conv_dim / nk, K]` in the model dtype, recurrent_state `[batch, nv, dk, dv]` in float32.
 */
export function deltaNetStateDecls(s: GatedDeltaNetSpec): StateDecl[] {
  return [
    { kind: 'conv_state', dims: ['batch', s.nk, convDim(s) / s.nk, s.kernel] },
    { kind: 'recurrent_state', dims: ['batch', s.nv, s.dk, s.dv], dtype: 'float32' },
  ];
}

/** One LinearContext per graph (per CacheContext): the masks every linear layer shares. */
const contexts = new WeakMap<CacheContext, LinearContext>();

/**
 * The attention block of a `gated-deltanet` layer (registered in layer-states.ts): its
 * conv_state / recurrent_state in, the updated ones out. A graph whose input_ids have a fixed
 * sequence of 1 (`--phase decode`) gets the recurrent step only; any other the If of both.
 */
export const gatedDeltaNetBlock: AttentionBlock = (c, _a, l, x, kv, _rope, states) => {
  if (l.attn.kind !== 'gated-deltanet') throw new Error('internal error: the gated-deltanet block got another attention kind');
  let lc = contexts.get(kv);
  if (!lc) {
    const ids = c.g.inputs.find((i) => i.name === 'input_ids');
    const seq = ids?.type.tensorType.shape.dim[1];
    const decode = !!seq && 'dimValue' in seq && seq.dimValue === 1;
    lc = linearContext(c, 'position_ids', kv.bs, kv.batchRows, decode ? 'decode' : 'both');
    contexts.set(kv, lc);
  }
  const conv = states.conv_state;
  const rec = states.recurrent_state;
  if (conv === undefined || rec === undefined)
    throw new Error('internal error: a gated-deltanet layer needs conv_state and recurrent_state');
  const r = gatedDeltaNet(c, l.attn, l.o, x, lc, { conv, rec });
  return { out: r.out, states: { conv_state: r.conv, recurrent_state: r.rec } };
};

/** Per-graph values every linear layer shares (built once by {@link linearContext}). */
export interface LinearContext {
  /** `[B, S, 1, 1]` and `[B, S, 1]` bool: position ≥ 0. */
  valid: string;
  valid3: string;
  /** `[B, 1, 1, 1]` bool: the row's positions include 0 (a new sequence: start from zero states). */
  reset: string;
  /** `[B, 1, 1]` int64: valid positions in the row. */
  nValid: string;
  /** Continuous batching: `[B]` int64 state rows. */
  rows?: string;
  /** `[B, S]` as an int64 shape vector. */
  bs: string;
  phase: Phase;
  /** The chunked rule's masks (not in decode graphs). */
  chunk?: ChunkConstants;
}

/** Builds the masks the linear layers share from `position_ids` `[B, S]`. */
export function linearContext(c: Ctx, positionIds: string, bs: string, rows: string | undefined, phase: Phase): LinearContext {
  const g = c.g;
  return g.within('linear_states', () => {
    const validBS = g.op('GreaterOrEqual', [positionIds, g.int(0)]);
    const count = (b: string) => g.reduce('ReduceSum', g.op('Cast', [b], { to: TensorDataType.INT64 }), [1], 1); // [B,1]
    const starts = g.op('Greater', [count(g.op('Equal', [positionIds, g.int(0)])), g.int(0)]);
    return {
      valid: unsqueeze(c, validBS, [2, 3]),
      valid3: unsqueeze(c, validBS, [2]),
      reset: unsqueeze(c, starts, [2, 3]),
      nValid: unsqueeze(c, count(validBS), [2]),
      ...(rows ? { rows } : {}),
      bs,
      phase,
      ...(phase === 'decode' ? {} : { chunk: chunkConstants(c) }),
    };
  });
}

/**
 * The layer on 2-D hidden `x [B·S, H]` with its states; returns the out_proj output and the
 * new states (full cache batch, in the inputs' layout).
 */
export function gatedDeltaNet(
  c: Ctx,
  s: GatedDeltaNetSpec,
  o: LinearSpec,
  x: string,
  lc: LinearContext,
  state: { conv: string; rec: string },
): { out: string; conv: string; rec: string } {
  const g = c.g;
  const C = convDim(s);
  const K = s.kernel;
  const { nk, nv, dk, dv } = s;
  const shaped = (t: string, tail: number[]) => g.op('Reshape', [t, g.op('Concat', [lc.bs, g.ints(tail)], { axis: 0 })]);
  const f32 = (t: string) => cast(c, t, c.dtype, 'float32');
  const zero = (elem: 'float32' | Ctx['dtype']) => g.scalar(elem, 0, 'zero');
  const readRows = (t: string) => (lc.rows ? g.op('Gather', [t, lc.rows], { axis: 0 }) : t);
  const writeRows = (full: string, t: string) => (lc.rows ? g.op('ScatterND', [full, unsqueeze(c, lc.rows, [1]), t]) : t);
  const fresh = (t: string, elem: 'float32' | Ctx['dtype']) => g.op('Where', [lc.reset, zero(elem), readRows(t)]);

  const qkv = linear(c, x, s.qkv); // [N, C]
  const z = linear(c, x, s.z); // [N, nv·dv]
  const bProj = linear(c, x, s.b); // [N, nv]
  const aProj = linear(c, x, s.a); // [N, nv]

  // causal depthwise conv over [last K inputs | new inputs]: out[t] = Σ_j w[j]·cat[t+1+j] (the last tap on the current token)
  const cat = g.within('conv', () => {
    const past = reshape(c, fresh(state.conv, c.dtype), [0, C, K]); // [B,C,K]
    return g.op('Concat', [past, transpose(c, shaped(qkv, [C]), [0, 2, 1])], { axis: 2 }); // [B,C,K+S]
  });
  const mixed = g.within('conv', () => {
    const w = reshape(c, weight(c, s.conv, [C, 1, K]), [C, K]);
    let y: string | undefined;
    for (let j = 0; j < K; j++) {
      const end = j === K - 1 ? 2 ** 62 : j + 1 - K; // taps j+1 … j+S of the K+S inputs
      const tap = g.op('Slice', [cat, g.ints([j + 1]), g.ints([end]), g.ints([2])]);
      const term = g.op('Mul', [tap, g.op('Slice', [w, g.ints([j]), g.ints([j + 1]), g.ints([1])])]); // w[:, j] as [C,1]
      y = y ? g.op('Add', [y, term]) : term;
    }
    return transpose(c, g.op('Mul', [y!, g.op('Sigmoid', [y!])]), [0, 2, 1]); // SiLU, [B,S,C]
  });
  // the new conv state: the K inputs ending at the row's last valid one (cat[nValid … nValid+K−1])
  const newConv = g.within('conv', () => {
    const idx = g.op('Add', [
      lc.nValid,
      g.constant(
        'int64',
        [1, 1, K],
        Array.from({ length: K }, (_, j) => j),
        'taps',
      ),
    ]);
    const shape = g.op('Concat', [g.op('Slice', [lc.bs, g.ints([0]), g.ints([1])]), g.ints([C, K])], { axis: 0 });
    return reshape(c, g.op('GatherElements', [cat, g.op('Expand', [idx, shape])], { axis: 2 }), [0, nk, C / nk, K]);
  });

  // q, k, v per head in float32; q/k L2-normalised (eps 1e-6), q · dk^-0.5, key heads repeated per value group
  const [qr, kr, vr] = split(c, mixed, 2, [nk * dk, nk * dk, nv * dv]);
  const l2 = (t: string) =>
    g.op('Mul', [
      t,
      g.op('Reciprocal', [
        g.op('Sqrt', [g.op('Add', [g.reduce('ReduceSum', g.op('Mul', [t, t]), [-1], 1), g.scalar('float32', 1e-6, 'l2_eps')])]),
      ]),
    ]);
  const groups = nv / nk;
  const perValueHead = (t: string) =>
    groups === 1 ? t : shaped(g.op('Expand', [unsqueeze(c, t, [3]), g.ints([1, 1, 1, groups, 1])]), [nv, dk]); // head j reads key head j // groups
  const masked = (t: string) => g.op('Where', [lc.valid, t, zero('float32')]); // padded tokens: zero q/k/v
  const heads = (t: string) => transpose(c, t, [0, 2, 1, 3]); // [B,S,h,d] → [B,h,S,d]
  const q = heads(masked(g.op('Mul', [perValueHead(l2(shaped(f32(qr!), [nk, dk]))), g.scalar('float32', Math.pow(dk, -0.5), 'q_scale')])));
  const k = heads(masked(perValueHead(l2(shaped(f32(kr!), [nk, dk])))));
  const v = heads(masked(shaped(f32(vr!), [nv, dv])));

  // beta = sigmoid(b) (model dtype, then float32); g = −exp(A_log)·softplus(a + dt_bias) in float32, 0 on padding
  const perToken = (t: string) => transpose(c, g.op('Where', [lc.valid3, shaped(t, [nv]), zero('float32')]), [0, 2, 1]); // [B,nv,S]
  const beta = perToken(f32(g.op('Sigmoid', [bProj])));
  const decay = g.within('decay', () => {
    const u = g.op('Add', [f32(aProj), f32(weight(c, s.dtBias, [nv]))]);
    // torch softplus (threshold 20): x above 20 is returned as is
    const softplus = g.op('Where', [
      g.op('Greater', [u, g.scalar('float32', 20, 'softplus_threshold')]),
      u,
      g.op('Log', [g.op('Add', [g.op('Exp', [u]), g.scalar('float32', 1, 'one')])]),
    ]);
    return perToken(g.op('Mul', [g.op('Neg', [g.op('Exp', [f32(weight(c, s.aLog, [nv]))])]), softplus]));
  });

  const s0 = fresh(state.rec, 'float32'); // [B,nv,dk,dv]
  const rule = { q, k, v, g: decay, beta, s0 };
  let core: { o: string; s: string };
  if (lc.phase === 'decode') core = g.within('recurrent', () => recurrentStep(c, rule));
  else if (lc.phase === 'prefill') core = g.within('chunked', () => chunkedRule(c, rule, lc.bs, s, lc.chunk!));
  else {
    const oDims: Dim[] = ['batch_size', nv, 'seq_len', dv];
    const sDims: Dim[] = ['batch_size', nv, dk, dv];
    const branch = (name: string, fn: () => { o: string; s: string }) =>
      g.subgraph(name, [], () => {
        const r = fn();
        return [
          { value: r.o, name: g.fresh(`${name}_o`), elem: 'float32', dims: oDims },
          { value: r.s, name: g.fresh(`${name}_s`), elem: 'float32', dims: sDims },
        ];
      });
    const isDecode = g.op('Equal', [g.op('Gather', [lc.bs, g.int(1)], { axis: 0 }), g.int(1)]);
    const [oOut, sOut] = g.opN(
      'If',
      [isDecode],
      {
        then_branch: { graph: branch('recurrent', () => recurrentStep(c, rule)) },
        else_branch: { graph: branch('chunked', () => chunkedRule(c, rule, lc.bs, s, lc.chunk!)) },
      },
      2,
    );
    core = { o: oOut!, s: sOut! };
  }

  // gated RMSNorm per value head: HF normalises in float32, casts to the model dtype, × w, then × silu(z) in float32
  const out = g.within('norm', () => {
    const o4 = f32(cast(c, transpose(c, core.o, [0, 2, 1, 3]), 'float32', c.dtype)); // [B,S,nv,dv], HF's .to(initial_dtype)
    const variance = g.reduce('ReduceMean', g.op('Mul', [o4, o4]), [-1], 1);
    const normed = g.op('Mul', [o4, g.op('Reciprocal', [g.op('Sqrt', [g.op('Add', [variance, g.scalar('float32', s.eps, 'eps')])])])]);
    const weighted = f32(g.op('Mul', [weight(c, s.norm, [dv]), cast(c, normed, 'float32', c.dtype)]));
    const zf = shaped(f32(z), [nv, dv]);
    const gated = g.op('Mul', [weighted, g.op('Mul', [zf, g.op('Sigmoid', [zf])])]);
    return reshape(c, cast(c, gated, 'float32', c.dtype), [-1, nv * dv]);
  });
  return { out: linear(c, out, o), conv: writeRows(state.conv, newConv), rec: writeRows(state.rec, core.s) };
}

/** The delta rule's operands: q, k `[B,nv,S,dk]`, v `[B,nv,S,dv]`, g, beta `[B,nv,S]` (float32), initial state `[B,nv,dk,dv]`. */
interface Rule {
  q: string;
  k: string;
  v: string;
  g: string;
  beta: string;
  s0: string;
}

/** HF `torch_recurrent_gated_delta_rule` for one token: S·e^g, then S += k ⊗ β(v − Sᵀk), o = Sᵀq. */
function recurrentStep(c: Ctx, r: Rule): { o: string; s: string } {
  const g = c.g;
  const decayed = g.op('Mul', [r.s0, g.op('Exp', [unsqueeze(c, r.g, [3])])]); // [B,nv,dk,dv]
  const memory = g.op('MatMul', [r.k, decayed]); // [B,nv,1,dv]
  const delta = g.op('Mul', [g.op('Sub', [r.v, memory]), unsqueeze(c, r.beta, [3])]);
  const s = g.op('Add', [decayed, g.op('MatMul', [transpose(c, r.k, [0, 1, 3, 2]), delta])]);
  return { o: g.op('MatMul', [r.q, s]), s };
}

/** The chunk's `[64, 64]` masks and matrices (built once per graph, outside any subgraph, so every layer shares them). */
interface ChunkConstants {
  /** row ≥ column */
  lower: string;
  /** row > column */
  strict: string;
  /** float32 M[j][i] = j ≤ i: g · M is the in-chunk cumulative sum */
  cumsum: string;
  /** float32 identity */
  eye: string;
}

function chunkConstants(c: Ctx): ChunkConstants {
  const g = c.g;
  // made from a Range at run time: a few nodes instead of 64×64 tables in the graph
  const idx = g.op('Range', [g.int(0), g.int(CHUNK), g.int(1)]);
  const rows = unsqueeze(c, idx, [1]);
  const cols = unsqueeze(c, idx, [0]);
  const lower = g.op('GreaterOrEqual', [rows, cols]);
  const strict = g.op('Greater', [rows, cols]);
  const f32 = (b: string) => g.op('Cast', [b], { to: TensorDataType.FLOAT });
  return { lower, strict, cumsum: f32(g.op('LessOrEqual', [rows, cols])), eye: f32(g.op('Equal', [rows, cols])) };
}

/** HF `torch_chunk_gated_delta_rule` (chunk 64) with an exact in-chunk solve; see the file comment. */
function chunkedRule(c: Ctx, r: Rule, bs: string, dims: GatedDeltaNetSpec, k64: ChunkConstants): { o: string; s: string } {
  const g = c.g;
  const seq = g.op('Gather', [bs, g.int(1)], { axis: 0 }); // S
  const pad = g.op('Mod', [g.op('Sub', [g.int(CHUNK), g.op('Mod', [seq, g.int(CHUNK)])]), g.int(CHUNK)]);
  // pads: nothing before, `pad` after the sequence axis (2) — [0…0, 0, 0, pad(, 0)]
  const padSeq = (t: string, rank: 3 | 4) =>
    g.op('Pad', [
      t,
      g.op('Concat', [g.ints(Array(rank + 2).fill(0)), unsqueeze(c, pad, [0]), ...(rank === 4 ? [g.ints([0])] : [])], { axis: 0 }),
    ]);
  const chunks4 = (t: string, d: number) => reshape(c, padSeq(t, 4), [0, 0, -1, CHUNK, d]); // [B,nv,n,64,d]
  const q = chunks4(r.q, dims.dk);
  const k = chunks4(r.k, dims.dk);
  const v = chunks4(r.v, dims.dv);
  const gg = reshape(c, padSeq(r.g, 3), [0, 0, -1, CHUNK]); // [B,nv,n,64]
  const beta = unsqueeze(c, reshape(c, padSeq(r.beta, 3), [0, 0, -1, CHUNK]), [4]); // [B,nv,n,64,1]
  const zero = g.scalar('float32', 0, 'zero');
  const { lower, strict } = k64;
  // in-chunk cumulative decay as a MatMul (QEfficient's cumsum replacement): gc[i] = Σ_{j≤i} g[j]
  const gc = g.op('MatMul', [gg, k64.cumsum]);
  const gcCol = unsqueeze(c, gc, [4]); // [B,nv,n,64,1]
  const diff = g.op('Sub', [gcCol, unsqueeze(c, gc, [3])]); // gc[i] − gc[j]
  const decay = g.op('Where', [lower, g.op('Exp', [g.op('Where', [lower, diff, zero])]), zero]); // exp only where j ≤ i
  const kT = transpose(c, k, [0, 1, 2, 4, 3]);
  const kBeta = g.op('Mul', [k, beta]);
  const vBeta = g.op('Mul', [v, beta]);
  const n = g.op('Where', [strict, g.op('Neg', [g.op('Mul', [g.op('MatMul', [kBeta, kT]), decay])]), zero]);
  const I = k64.eye;
  let inv = g.op('Add', [I, n]);
  let power = n;
  for (let m = 1; m < Math.log2(CHUNK); m++) {
    power = g.op('MatMul', [power, power]); // N^(2^m)
    inv = g.op('MatMul', [inv, g.op('Add', [I, power])]);
  }
  const value = g.op('MatMul', [inv, vBeta]); // [B,nv,n,64,dv]
  const kCumDecay = g.op('MatMul', [inv, g.op('Mul', [kBeta, g.op('Exp', [gcCol])])]); // [B,nv,n,64,dk]
  const intra = g.op('Where', [lower, g.op('Mul', [g.op('MatMul', [q, kT]), decay]), zero]); // [B,nv,n,64,64]
  const qDecay = g.op('Mul', [q, g.op('Exp', [gcCol])]);
  const gLast = g.op('Slice', [gc, g.ints([CHUNK - 1]), g.ints([CHUNK]), g.ints([3])]); // [B,nv,n,1]
  const kDecayT = transpose(c, g.op('Mul', [k, g.op('Exp', [unsqueeze(c, g.op('Sub', [gLast, gc]), [4])])]), [0, 1, 2, 4, 3]); // [B,nv,n,dk,64]
  const stateDecay = g.op('Exp', [unsqueeze(c, gLast, [4])]); // [B,nv,n,1,1]

  const trips = g.op('Div', [g.op('Add', [seq, pad]), g.int(CHUNK)]);
  const iter = g.fresh('chunk');
  const condIn = g.fresh('cond_in');
  const sIn = g.fresh('state_in');
  const sDims: Dim[] = ['batch_size', 'nv', 'dk', 'dv'];
  const body = g.subgraph(
    'chunk_step',
    [
      { name: iter, elem: 'int64', dims: [] },
      { name: condIn, elem: 'bool', dims: [] },
      { name: sIn, elem: 'float32', dims: sDims },
    ],
    () => {
      const at = (t: string) => g.op('Gather', [t, iter], { axis: 2 }); // chunk `iter` of a [B,nv,n,…] tensor
      const vNew = g.op('Sub', [at(value), g.op('MatMul', [at(kCumDecay), sIn])]); // [B,nv,64,dv]
      const o = g.op('Add', [g.op('MatMul', [at(qDecay), sIn]), g.op('MatMul', [at(intra), vNew])]);
      const s = g.op('Add', [g.op('Mul', [sIn, at(stateDecay)]), g.op('MatMul', [at(kDecayT), vNew])]);
      return [
        { value: condIn, name: g.fresh('cond_out'), elem: 'bool', dims: [] },
        { value: s, name: g.fresh('state_out'), elem: 'float32', dims: sDims },
        { value: o, name: g.fresh('chunk_out'), elem: 'float32', dims: ['batch_size', 'nv', CHUNK, 'dv'] },
      ];
    },
  );
  const [sFinal, stacked] = g.opN('Loop', [trips, g.constant('bool', [], [1], 'true'), r.s0], { body: { graph: body } }, 2);
  // [n,B,nv,64,dv] → [B,nv,n·64,dv] → the first S positions
  const o = reshape(c, transpose(c, stacked!, [1, 2, 0, 3, 4]), [0, 0, -1, dims.dv]);
  return { o: g.op('Slice', [o, g.ints([0]), unsqueeze(c, seq, [0]), g.ints([2])]), s: sFinal! };
}
