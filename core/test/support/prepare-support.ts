/**
 * Shared helpers of the prepare tests: checkpoints built in code (real safetensors files on
 * disk, sharded with an index), the worker bundled from the current source, and readers.
 */
import { rng } from '../../src/foundation/rng';
import { buildSync } from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import type { DType } from '../../src/formats/dtype';
import { Checkpoint, writeSafetensors, type TensorData } from '../../src/formats/safetensors';
import { REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

/** A fresh temp dir, removed after the test file (tempDirs registers the cleanup). */
export const tempDir = tempDirs('ws-prep-');

let bundled: string | undefined;
/** dist-style worker bundle of core/src/prepare/worker.ts, built once per test file (removed with its temp dirs). */
export function workerPath(): string {
  if (bundled) return bundled;
  const out = path.join(tempDir('ws-prep-worker-'), 'prepare-worker.js');
  buildSync({
    entryPoints: [path.join(REPO_ROOT, 'core/src/prepare/worker.ts')],
    outfile: out,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    logLevel: 'error',
    mainFields: ['module', 'main'],
  });
  bundled = out;
  return out;
}

/** Deterministic pseudo-random generator (mulberry32), shared with the demo model. */
export { rng };

/** `n` random bf16 values (bit patterns of finite numbers in ±4) as bytes. */
export function randomBf16(n: number, seed: number): Uint8Array {
  const r = rng(seed);
  const f = new Float32Array(n);
  for (let i = 0; i < n; i++) f[i] = (r() - 0.5) * 8;
  const u = new Uint32Array(f.buffer);
  const out = new Uint16Array(n);
  for (let i = 0; i < n; i++) out[i] = u[i]! >>> 16;
  return new Uint8Array(out.buffer);
}

/** A tensor for {@link writeCheckpoint}: random bf16 unless `data` is given. */
export function t(key: string, shape: number[], seed: number, dtype: DType = 'BF16', data?: Uint8Array): TensorData {
  const n = shape.reduce((a, b) => a * b, 1);
  return { key, dtype, shape, data: data ?? (dtype === 'BF16' ? randomBf16(n, seed) : new Uint8Array(n * 4)) };
}

/**
 * Writes an HF-style checkpoint: `shards` lists the tensors of each shard
 * (`model-0000i-of-0000n.safetensors`), plus the index and config.json.
 */
export async function writeCheckpoint(dir: string, shards: TensorData[][], config: Record<string, unknown> = {}): Promise<void> {
  fs.mkdirSync(dir, { recursive: true });
  const weightMap: Record<string, string> = {};
  for (const [i, tensors] of shards.entries()) {
    const name =
      shards.length === 1
        ? 'model.safetensors'
        : `model-${String(i + 1).padStart(5, '0')}-of-${String(shards.length).padStart(5, '0')}.safetensors`;
    await writeSafetensors(path.join(dir, name), tensors, { format: 'pt' });
    for (const x of tensors) weightMap[x.key] = name;
  }
  if (shards.length > 1)
    fs.writeFileSync(path.join(dir, 'model.safetensors.index.json'), JSON.stringify({ metadata: {}, weight_map: weightMap }));
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config));
}

/** Bytes of `key` in a (prepared) checkpoint directory. */
export async function readKey(dir: string, key: string): Promise<Uint8Array> {
  const c = await Checkpoint.open(dir);
  return c.read(key);
}

/** u16 view. */
export function u16(b: Uint8Array): Uint16Array {
  return new Uint16Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

/** Equal bytes? (fast, with a readable failure) */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}

/** Concatenation. */
export function concat(parts: Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(parts.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength))));
}

/**
 * QEfficient's canonical MoE orientation, computed here independently of prepare: each of
 * the `E` expert matrices `[rows, cols]` (`size`-byte elements) of `bytes` transposed to
 * `[cols, rows]` (`stack_expert_linears(transpose=True)`, quic/efficient-transformers
 * `QEfficient/transformers/moe/weights.py` at 1b7aa83).
 */
export function transposeExperts(bytes: Uint8Array, E: number, rows: number, cols: number, size: number): Uint8Array {
  const out = new Uint8Array(bytes.byteLength);
  const m = rows * cols * size;
  for (let e = 0; e < E; e++) {
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        for (let b = 0; b < size; b++) out[e * m + (c * rows + r) * size + b] = bytes[e * m + (r * cols + c) * size + b]!;
      }
    }
  }
  return out;
}

/** `view(P, N, …).transpose(0, 1)` of a stacked `[E, …]` tensor (N = E / P), done on the bytes: slot n·P + p = expert p·N + n. */
export function packedOf(stacked: Uint8Array, E: number, P: number): Uint8Array {
  const slice = stacked.byteLength / E;
  const N = E / P;
  const parts: Uint8Array[] = [];
  for (let n = 0; n < N; n++) for (let p = 0; p < P; p++) parts.push(stacked.subarray((p * N + n) * slice, (p * N + n + 1) * slice));
  return concat(parts);
}

/** Independent f64 → f16 RNE reference (value arithmetic, not bit tricks). */
export function refHalf(x: number): number {
  if (Number.isNaN(x)) return 0x7e00;
  const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.abs(x);
  const roundEven = (v: number) => {
    const f = Math.floor(v);
    const d = v - f;
    return d > 0.5 || (d === 0.5 && f % 2 === 1) ? f + 1 : f;
  };
  if (a >= 65520) return sign | 0x7c00;
  if (a < 2 ** -14) return sign | roundEven(a / 2 ** -24);
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e--;
  if (2 ** (e + 1) <= a) e++;
  let q = roundEven((a / 2 ** e - 1) * 1024);
  if (q === 1024) {
    q = 0;
    e++;
  }
  if (e > 15) return sign | 0x7c00;
  return sign | ((e + 15) << 10) | q;
}

/** The value of bf16 bits. */
export function bf16ToNumber(bits: number): number {
  return new Float32Array(new Uint32Array([bits << 16]).buffer)[0]!;
}
