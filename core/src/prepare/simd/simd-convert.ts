/**
 * The SIMD kernels of convert.wat, for the dense conversions that dominate prepare (bf16 →
 * f16, bf16 → f32, f32 → f16) and the transposed stacking of MoE experts (16-bit elements).
 * One module instance per thread, whose memory serves one converter or transposer at a time
 * (each call lays it out anew; a task uses them one after another). Each runs in the module's own memory: the
 * caller reads a chunk straight into {@link SimdConverter.input}, runs the kernel and writes
 * {@link SimdConverter.output}, so no byte is copied more than the conversion itself needs.
 * Where WebAssembly SIMD is missing, {@link simdConverter} returns undefined and the scalar
 * kernels (kernels.ts) do the work; the results are the same bit for bit (tested).
 */
import type { DType } from '../../formats/dtype';
import { narrowingTally } from '../overflow';
import { CONVERT_WASM_BASE64 } from './convert-wasm';

/** A chunk converter over the module's memory. */
export interface SimdConverter {
  /** The first `elems` input elements' bytes, in the module's memory: fill them, then {@link run}. */
  input(elems: number): Uint8Array;
  /** The first `elems` output elements' bytes, valid after {@link run}. */
  output(elems: number): Uint8Array;
  /** Converts `elems` elements from input to output (a tail of fewer than 8 goes through `tail`). */
  run(elems: number): void;
}

/** The kernel export of each pair. */
const EXPORTS: Partial<Record<string, string>> = { 'BF16>F16': 'bf16_f16', 'BF16>F32': 'bf16_f32', 'F32>F16': 'f32_f16' };
const SIZES: Partial<Record<DType, number>> = { BF16: 2, F16: 2, F32: 4 };

/** The module's exports (its memory and kernels, by name). */
export interface Kernels {
  memory: { buffer: ArrayBuffer; grow(pages: number): number };
  [name: string]: unknown;
}

// The few WebAssembly globals used here (the project's `lib` has no DOM, and @types/node 20 none).
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: object };
};

let kernels: Kernels | null | undefined;
/** The instantiated module (one per thread), or null where WebAssembly SIMD is unavailable. */
export function instance(): Kernels | null {
  if (kernels !== undefined) return kernels;
  try {
    const bytes = Buffer.from(CONVERT_WASM_BASE64, 'base64');
    kernels = new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports as unknown as Kernels;
  } catch {
    kernels = null; // no SIMD (old engine, or WebAssembly disabled): the scalar kernels serve
  }
  return kernels;
}

/**
 * A SIMD converter `from` → `to` for chunks of up to `maxElems` elements, or undefined when
 * there is no kernel for the pair (or no WebAssembly SIMD here). `tail` converts the last
 * fewer-than-8 elements of a chunk (a scalar converter of the same pair).
 */
export function simdConverter(
  from: DType,
  to: DType,
  maxElems: number,
  tail: (src: Uint8Array, dst: Uint8Array) => unknown,
): SimdConverter | undefined {
  if (process.env.WEIGHT_SPEC_SIMD === 'off') return undefined;
  const name = EXPORTS[`${from}>${to}`];
  const k = name ? instance() : null;
  if (!k || !name) return undefined;
  // the narrowing kernels return their ±Inf/NaN results' count (bf16_f32 returns nothing)
  const kernel = k[name] as (src: number, dst: number, n: number) => number | undefined;
  const inSize = SIZES[from]!;
  const outSize = SIZES[to]!;
  const outAt = Math.ceil((maxElems * inSize) / 16) * 16;
  const need = outAt + maxElems * outSize;
  reserve(k, need);
  // views are made per call: growing the memory (another converter) detaches older ones
  const view = (at: number, bytes: number) => new Uint8Array(k.memory.buffer, at, bytes);
  return {
    input: (elems) => view(0, elems * inSize),
    output: (elems) => view(outAt, elems * outSize),
    run(elems) {
      if (elems > maxElems) throw new RangeError(`simd convert: ${elems} elements, room for ${maxElems}`);
      const body = elems - (elems % 8);
      narrowingTally.nonFinite += kernel(0, outAt, body) ?? 0;
      if (body < elems) tail(view(body * inSize, (elems - body) * inSize), view(outAt + body * outSize, (elems - body) * outSize));
    },
  };
}

/** Grows the module's memory to at least `bytes`. */
export function reserve(k: Kernels, bytes: number): void {
  const have = k.memory.buffer.byteLength;
  if (bytes > have) k.memory.grow(Math.ceil((bytes - have) / 65536));
}

/** A batch transposer over the module's memory: expert slices in, a batch of transposed slices out. */
export interface SimdTransposer {
  /** One source slice's bytes (`elems` elements), in the module's memory. */
  input(elems: number): Uint8Array;
  /** The first `slices` output slices of `elems` elements each. */
  output(slices: number, elems: number): Uint8Array;
  /** Transposes the input `[rows, cols]` into output slot `slot` as `[cols, rows]`, converted. */
  run(rows: number, cols: number, slot: number): void;
}

/**
 * A SIMD transposer of 16-bit `from` → `to` (bf16 → f16, or no conversion) for slices of
 * `sliceElems` elements, `slots` output slices at once; undefined for other pairs, shapes
 * whose sides are not multiples of 8 (`rows`, `cols`), or without WebAssembly SIMD.
 */
export function simdTransposer(from: DType, to: DType, rows: number, cols: number, slots: number): SimdTransposer | undefined {
  if (process.env.WEIGHT_SPEC_SIMD === 'off' || rows % 8 !== 0 || cols % 8 !== 0) return undefined;
  const convert = from === to ? undefined : EXPORTS[`${from}>${to}`];
  if (SIZES[from] !== 2 || SIZES[to] !== 2 || (from !== to && convert !== 'bf16_f16')) return undefined;
  const k = instance();
  if (!k) return undefined;
  const transpose = k.transpose16 as (src: number, dst: number, rows: number, cols: number) => void;
  const cvt = convert ? (k[convert] as (src: number, dst: number, n: number) => number) : undefined;
  const slice = rows * cols * 2;
  const outAt = Math.ceil(slice / 16) * 16;
  reserve(k, outAt + slots * slice);
  const view = (at: number, bytes: number) => new Uint8Array(k.memory.buffer, at, bytes);
  return {
    input: (elems) => view(0, elems * 2),
    output: (n, elems) => view(outAt, n * elems * 2),
    run(r, c, slot) {
      if (r * c * 2 !== slice || slot >= slots) throw new RangeError(`simd transpose: [${r}, ${c}] slot ${slot} does not fit`);
      const dst = outAt + slot * slice;
      transpose(0, dst, r, c);
      if (cvt) narrowingTally.nonFinite += cvt(dst, dst, r * c);
    },
  };
}
