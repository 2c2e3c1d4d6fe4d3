/**
 * Deterministic random tensors for the code-made checkpoints of the graph tests: a seeded PRNG
 * (mulberry32) with a normal sampler, bf16 rounding (the fixtures store BF16 weights) and a
 * `put(key, shape, scale, center)` that fills a checkpoint map. A leaf: the family test files
 * (`families/<name>.ts`) and the dispatchers (`graph-random.ts`) both import it.
 */
import type { F32 } from './graph-support';

/** Deterministic PRNG (mulberry32) with a normal sampler. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  const uni = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(uni() + 1e-12)) * Math.cos(2 * Math.PI * uni());
}

/** Rounds to bfloat16 (nearest even), as the fixtures store weights. */
export function bf16(x: number): number {
  const f = new Float32Array([x]);
  const u = new Uint32Array(f.buffer);
  u[0] = ((u[0]! + 0x7fff + ((u[0]! >>> 16) & 1)) >>> 16) << 16;
  return f[0]!;
}

/** Adds a tensor `key` of `shape`, values bf16(center + scale · N(0, 1)). */
export type Put = (key: string, shape: number[], scale: number, center?: number) => void;

/** A checkpoint filled by `fill` through a {@link Put} drawing from `rng(seed)`. */
export function randomTensors(seed: number, fill: (put: Put) => void): Map<string, F32> {
  const r = rng(seed);
  const w = new Map<string, F32>();
  fill((k, shape, scale, center = 0) => {
    const n = shape.reduce((a, b) => a * b, 1);
    w.set(k, { shape, data: Float32Array.from({ length: n }, () => bf16(center + scale * r())) });
  });
  return w;
}
