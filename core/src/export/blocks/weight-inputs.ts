/**
 * The weight inputs of a built graph, from its architecture: what the graph takes by name and
 * shape (the weight spec maps each to a checkpoint key), in first-use order — the plain and
 * MoE layers, kept int4 Linears (MatMulNBits' order) and Gated DeltaNet layers. The shapes are
 * the specs' (arch.ts); this file only enumerates them.
 */
import type { ArchSpec, GatedDeltaNetSpec, LinearSpec, NBitsSpec, NormSpec } from './arch';
import { convDim } from './arch';
import { moeWeightInputs } from './moe-weights';

/** A weight the graph takes as input: its (prepared) checkpoint key and expected shape. */
export interface WeightInput {
  name: string;
  shape: number[];
  /** Element type when not the compute dtype (packed int4: uint8 codes, int32 g_idx). */
  elem?: 'uint8' | 'int32';
}

/** The graph inputs of a kept int4 Linear, in MatMulNBits' input order. */
export function nbitsInputs(l: LinearSpec & { nbits: NBitsSpec }): WeightInput[] {
  const n = l.nbits;
  return [
    { name: n.qweight, shape: [l.out, n.blocks, n.blockSize / 2], elem: 'uint8' },
    { name: n.scales, shape: [l.out * n.blocks] },
    { name: n.qzeros, shape: [l.out * Math.ceil(n.blocks / 2)], elem: 'uint8' },
    ...(n.gIdx ? [{ name: n.gIdx, shape: [l.in], elem: 'int32' as const }] : []),
  ];
}

/** All weight inputs of an architecture, in first-use order, deduplicated. */
export function weightInputs(a: ArchSpec): WeightInput[] {
  const out = new Map<string, number[]>();
  const elems = new Map<string, 'uint8' | 'int32'>();
  const add = (name: string | undefined, shape: number[]) => {
    if (name && !out.has(name)) out.set(name, shape);
  };
  const lin = (l: LinearSpec) => {
    if (l.nbits) {
      for (const w of nbitsInputs({ ...l, nbits: l.nbits })) {
        add(w.name, w.shape);
        if (w.elem) elems.set(w.name, w.elem);
      }
    } else add(l.weight, l.conv1d ? [l.in, l.out] : [l.out, l.in]);
    add(l.bias, [l.out]);
  };
  const norm = (n: NormSpec) => {
    add(n.weight, [n.size]);
    add(n.bias, [n.size]);
  };
  add(a.embed, [a.vocab, a.hidden]);
  if (a.positions) add(a.positions.weight, [a.positions.max, a.hidden]);
  for (const l of a.layers) {
    if (l.norm1) norm(l.norm1);
    if (l.attn.kind === 'separate') [l.attn.q, l.attn.k, l.attn.v].forEach(lin);
    else if (l.attn.kind === 'fused') lin(l.attn.qkv);
    else if (l.attn.kind === 'gated-deltanet') for (const w of deltaNetWeightInputs(l.attn, a.hidden)) add(w.name, w.shape);
    else {
      const m = l.attn;
      if (m.q) lin(m.q);
      if (m.qA) lin(m.qA);
      if (m.qANorm) norm(m.qANorm);
      if (m.qB) lin(m.qB);
      [m.kvA].forEach(lin);
      norm(m.kvANorm);
      lin(m.kvB);
    }
    if (l.qNorm) norm(l.qNorm);
    if (l.kNorm) norm(l.kNorm);
    add(l.sinks, [a.nHeads]);
    lin(l.o);
    if (l.postAttnNorm) norm(l.postAttnNorm);
    if (l.norm2) norm(l.norm2);
    const m = l.mlp;
    if (m.kind === 'gated') [m.gate, m.up, m.down].forEach(lin);
    else if (m.kind === 'gated-fused') [m.gateUp, m.down].forEach(lin);
    else if (m.kind === 'plain') [m.fc, m.proj].forEach(lin);
    else {
      add(m.router, [m.weights.experts, a.hidden]);
      add(m.routerBias, [m.weights.experts]);
      if (m.group) add(m.group.correctionBias, [m.weights.experts]);
      for (const w of moeWeightInputs(m.weights)) add(w.name, w.shape);
      if (m.shared) [m.shared.gate, m.shared.up, m.shared.down].forEach(lin);
      add(m.sharedGate, [1, a.hidden]);
    }
    if (l.postMlpNorm) norm(l.postMlpNorm);
  }
  norm(a.finalNorm);
  add(a.lmHead, [a.vocab, a.hidden]);
  add(a.lmHeadBias, [a.vocab]);
  return [...out].map(([name, shape]) => ({ name, shape, ...(elems.has(name) ? { elem: elems.get(name)! } : {}) }));
}

/** The layer's weight inputs (besides out_proj, the layer's `o`). */
export function deltaNetWeightInputs(s: GatedDeltaNetSpec, hidden: number): { name: string; shape: number[] }[] {
  return [
    { name: s.qkv.weight, shape: [convDim(s), hidden] },
    { name: s.z.weight, shape: [s.nv * s.dv, hidden] },
    { name: s.b.weight, shape: [s.nv, hidden] },
    { name: s.a.weight, shape: [s.nv, hidden] },
    { name: s.conv, shape: [convDim(s), 1, s.kernel] },
    { name: s.dtBias, shape: [s.nv] },
    { name: s.aLog, shape: [s.nv] },
    { name: s.norm, shape: [s.dv] },
  ];
}
