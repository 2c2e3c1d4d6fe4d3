/**
 * Shared harness of the property-based fuzz tests. Seeds are fixed (reproducible) unless
 * FUZZ_SEED is set; FUZZ_SCALE multiplies every budget (`npm run fuzz` raises it). Each
 * campaign's case and failure counts are appended to FUZZ_REPORT (JSON lines) when set, so
 * scripts/fuzz.mjs can print totals. Every case must end in a result or a FormatError,
 * within a time bound, without a large allocation.
 */
import fs from 'node:fs';
import fc from 'fast-check';
import { FormatError } from '../../src/errors';

/** Outcome counts of a campaign, so a test can prove its generator reaches both outcomes. */
export const tally = {
  ok: 0,
  refused: 0,
  reset(): void {
    this.ok = 0;
    this.refused = 0;
  },
};

/** Budget multiplier (1 in `npm test`). */
export const FUZZ_SCALE = Number(process.env.FUZZ_SCALE ?? '1') || 1;
/** Base seed; each campaign derives its own from its name. */
export const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? '20261202') | 0;
/** Most any single case may take (a generous bound: a hang, not slowness, is the bug). */
export const CASE_MS = 2_000;
/** Most array-buffer memory a case may allocate for inputs of a few KB. */
export const CASE_BYTES = 64 * 1024 * 1024;

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h | 0;
}

/** fast-check parameters for campaign `name` with `runs` cases at scale 1. */
export function params<T>(name: string, runs: number): fc.Parameters<T> {
  return { seed: FUZZ_SEED ^ hash(name), numRuns: Math.max(1, Math.round(runs * FUZZ_SCALE)), endOnFailure: true };
}

function report(name: string, d: fc.RunDetails<unknown>): void {
  const file = process.env.FUZZ_REPORT;
  if (file) fs.appendFileSync(file, `${JSON.stringify({ name, cases: d.numRuns, failures: d.failed ? 1 : 0, seed: d.seed })}\n`);
}

/** Runs a sync property, records its counts, throws fast-check's report on failure. */
export function runFuzz<T>(name: string, runs: number, arb: fc.Arbitrary<T>, pred: (v: T) => void): void {
  const d = fc.check(
    fc.property(arb, (v) => {
      pred(v);
    }),
    params(name, runs),
  );
  report(name, d as fc.RunDetails<unknown>);
  if (d.failed) throw failure(name, d as fc.RunDetails<unknown>);
}

/** Async form of {@link runFuzz}. */
export async function runFuzzAsync<T>(name: string, runs: number, arb: fc.Arbitrary<T>, pred: (v: T) => Promise<void>): Promise<void> {
  const d = await fc.check(
    fc.asyncProperty(arb, async (v) => {
      await pred(v);
    }),
    params(name, runs),
  );
  report(name, d as fc.RunDetails<unknown>);
  if (d.failed) throw failure(name, d as fc.RunDetails<unknown>);
}

function failure(name: string, d: fc.RunDetails<unknown>): Error {
  const cause = d.errorInstance instanceof Error ? `${d.errorInstance.name}: ${d.errorInstance.message}` : String(d.errorInstance);
  const ce = fc.stringify(d.counterexample);
  return new Error(
    `${name} failed (seed ${d.seed}, path ${d.counterexamplePath}): ${cause}\ncounterexample: ${ce.length > 4000 ? `${ce.slice(0, 4000)}…` : ce}`,
  );
}

/**
 * Calls `fn` and classifies the outcome: a value, or a FormatError (whose message must be
 * one line naming `file`). Anything else thrown — TypeError, RangeError, a plain Error —
 * is a bug and is rethrown. Also enforces the time and allocation bounds.
 */
export function outcome<T>(file: string, fn: () => T): { ok: true; value: T } | { ok: false; error: FormatError } {
  const before = process.memoryUsage().arrayBuffers;
  const t0 = performance.now();
  let res: { ok: true; value: T } | { ok: false; error: FormatError };
  try {
    res = { ok: true, value: fn() };
    tally.ok++;
  } catch (e) {
    if (!(e instanceof FormatError)) throw e;
    checkMessage(e, file);
    res = { ok: false, error: e };
    tally.refused++;
  }
  bounds(t0, before);
  return res;
}

/** Async form of {@link outcome}. */
export async function outcomeAsync<T>(
  file: string,
  fn: () => Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; error: FormatError }> {
  const before = process.memoryUsage().arrayBuffers;
  const t0 = performance.now();
  let res: { ok: true; value: T } | { ok: false; error: FormatError };
  try {
    res = { ok: true, value: await fn() };
    tally.ok++;
  } catch (e) {
    if (!(e instanceof FormatError)) throw e;
    checkMessage(e, file);
    res = { ok: false, error: e };
    tally.refused++;
  }
  bounds(t0, before);
  return res;
}

function checkMessage(e: FormatError, file: string): void {
  if (e.message.includes('\n')) throw new Error(`multi-line FormatError: ${JSON.stringify(e.message)}`);
  if (!e.message.includes(file)) throw new Error(`FormatError does not name ${file}: ${e.message}`);
}

function bounds(t0: number, before: number): void {
  const ms = performance.now() - t0;
  if (ms > CASE_MS) throw new Error(`case took ${ms.toFixed(0)} ms (bound ${CASE_MS} ms)`);
  const grown = process.memoryUsage().arrayBuffers - before;
  if (grown > CASE_BYTES) throw new Error(`case allocated ${(grown / 2 ** 20).toFixed(0)} MiB of buffers`);
}

/** Mutations applied to a valid encoding: flips, truncation, splices, overwrite of a window. */
export function mutated(base: fc.Arbitrary<Uint8Array>): fc.Arbitrary<Uint8Array> {
  // Copies as plain Uint8Array (Buffer's fill/slice differ) before mutating.
  return base
    .map((x) => Uint8Array.from(x))
    .chain((b) =>
      fc.oneof(
        fc.constant(b),
        fc
          .array(fc.tuple(fc.nat(Math.max(0, b.length - 1)), fc.integer({ min: 1, max: 255 })), { minLength: 1, maxLength: 8 })
          .map((flips) => {
            const c = b.slice();
            for (const [i, x] of flips) if (c.length) c[i] ^= x;
            return c;
          }),
        fc.nat(b.length).map((n) => b.slice(0, n)),
        fc
          .tuple(fc.nat(b.length), fc.uint8Array({ maxLength: 32 }))
          .map(([i, ins]) => Uint8Array.from([...b.subarray(0, i), ...ins, ...b.subarray(i)])),
        fc.tuple(fc.nat(Math.max(0, b.length - 1)), fc.constantFrom(0x00, 0xff, 0x7f, 0x80)).map(([i, v]) => {
          const c = b.slice();
          c.fill(v, i, Math.min(c.length, i + 8));
          return c;
        }),
        fc.uint8Array({ maxLength: 256 }),
      ),
    );
}
