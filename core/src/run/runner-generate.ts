/**
 * The runner's contract (`Runner`) and what every kind of graph shares behind it: the id checks,
 * the per-generation sampling state, host sampling of a logits row and the timings of
 * `generateWithStats`. runner.ts wires a session's graph (full-sequence or KV) to it.
 */
import { PipelineError } from '../errors';
import { GREEDY, PenaltyBuffers, sampleToken, uniformStream, type SamplingParams } from './sampling';
import type { ServingFeatures } from './serving';
import type { SpeculativeStats } from './speculative';
import type { OrtSession } from '../ort/loader';

/** Timing of one generation. */
export interface GenerateStats {
  tokens: number[];
  /** Milliseconds from the call to the first new token. */
  ttftMs: number;
  /** New tokens per second after the first (all tokens when only one). */
  tokensPerSecond: number;
  totalMs: number;
  /** CCL graphs: the comp_ctx_lengths buckets used, in order (repeats collapsed). */
  buckets?: number[];
  /** Speculative-decoding target graphs: the decode calls of K + 1 tokens (speculative.ts). */
  speculative?: SpeculativeStats;
}

/** A loaded model. */
export interface Runner {
  readonly kind: 'full' | 'kv';
  readonly model: string;
  /** CCL and on-device sampler, as the graph declares them. */
  readonly features: ServingFeatures;
  /** Logits predicting token t+1 for every t of `ids` (one row per id). */
  logits(ids: number[]): Promise<number[][]>;
  /** `n` new tokens after `ids`: greedy by default, else sampled with `sampling`. */
  generate(ids: number[], n: number, sampling?: SamplingParams): Promise<number[]>;
  /**
   * {@link Runner.generate} with timings. `onToken` sees each new token as it is chosen (to
   * stream it); returning true stops the generation there (an end-of-sequence token).
   */
  generateWithStats(ids: number[], n: number, sampling?: SamplingParams, onToken?: OnToken): Promise<GenerateStats>;
  /**
   * KV graphs, one batch of rows of equal length (a different prompt and LoRA adapter per row):
   * every row's logits rows, as {@link Runner.logits} gives them for one.
   */
  logitsBatch(rows: number[][], loraIds?: number[]): Promise<number[][][]>;
  /** KV graphs: `n` greedy tokens after each row, the rows decoded together in one batch. */
  generateBatch(rows: number[][], n: number, loraIds?: number[]): Promise<number[][]>;
  close(): Promise<void>;
}

/** Called with each new token as it is chosen; returning true ends the generation after it. */
export type OnToken = (token: number) => boolean | void;

/** Per-generation sampling state: parameters, uniform numbers, host penalty buffers, CCL buckets used, the token callback. */
export interface GenState {
  p: SamplingParams;
  onToken?: OnToken;
  draw: (k: number) => Float32Array;
  host: PenaltyBuffers | undefined;
  buckets: number[];
  speculative?: SpeculativeStats;
}

export function genState(p: SamplingParams | undefined): GenState {
  const params = p ?? GREEDY;
  const seed = params.seed ?? Math.floor(Math.random() * 2 ** 32);
  return { p: params, draw: uniformStream(seed), host: undefined, buckets: [] };
}

/** Token from a row of logits: host sampling (penalty buffers updated by the caller). */
export function hostToken(gen: GenState, row: Float32Array, u: Float32Array | undefined): number {
  gen.host ??= new PenaltyBuffers(row.length);
  return sampleToken(row, gen.host, gen.p, row.length, u ?? new Float32Array(0));
}

/**
 * Refuses ids outside the vocabulary before ONNX Runtime sees them (its Gather would fail with
 * an index error, or worse read a neighbouring row on some providers).
 * @param vocab the logits' last dimension, when the graph fixes it
 */
export function checkTokenIds(ids: readonly number[], vocab: number | undefined, model: string): void {
  if (vocab === undefined) return;
  const bad = ids.findIndex((t) => !Number.isInteger(t) || t < 0 || t >= vocab);
  if (bad >= 0) {
    throw new PipelineError(
      `token id ${ids[bad]} (position ${bad}) is outside the vocabulary of ${model}: ids must be 0…${vocab - 1} (${vocab} tokens)`,
    );
  }
}

export function makeRunner(
  kind: 'full' | 'kv',
  model: string,
  vocab: number | undefined,
  features: ServingFeatures,
  session: OrtSession,
  logits: (ids: number[]) => Promise<number[][]>,
  decode: (ids: number[], n: number, onFirst: () => void, gen: GenState) => Promise<number[]>,
  batch?: { logits: Runner['logitsBatch']; generate: Runner['generateBatch'] },
): Runner {
  const noBatch = async (): Promise<never> => {
    throw new PipelineError(`${model}: a batch of different rows needs a KV-cache graph (past_key.{i} inputs)`);
  };
  const check = (ids: number[]) => {
    if (ids.length === 0) throw new PipelineError('no input ids given');
    checkTokenIds(ids, vocab, model);
  };
  const generateWithStats = async (ids: number[], n: number, sampling?: SamplingParams, onToken?: OnToken): Promise<GenerateStats> => {
    check(ids);
    const gen = genState(sampling);
    if (onToken) gen.onToken = onToken;
    const t0 = performance.now();
    let first = t0;
    const tokens = n > 0 ? await decode(ids, n, () => (first = performance.now()), gen) : [];
    const end = performance.now();
    const ttftMs = first - t0;
    const rest = end - first;
    // an end-of-sequence token may stop the generation before n
    const got = tokens.length;
    const tokensPerSecond = got > 1 && rest > 0 ? ((got - 1) * 1000) / rest : got > 0 ? (got * 1000) / Math.max(end - t0, 1e-3) : 0;
    return {
      tokens,
      ttftMs,
      tokensPerSecond,
      totalMs: end - t0,
      ...(features.ccl ? { buckets: gen.buckets } : {}),
      ...(gen.speculative ? { speculative: gen.speculative } : {}),
    };
  };
  return {
    kind,
    model,
    features,
    logits: async (ids) => (check(ids), logits(ids)),
    generate: async (ids, n, sampling) => (await generateWithStats(ids, n, sampling)).tokens,
    generateWithStats,
    logitsBatch: batch?.logits ?? noBatch,
    generateBatch: batch?.generate ?? noBatch,
    close: async () => {
      await session.release?.();
    },
  };
}
