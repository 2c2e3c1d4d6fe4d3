/**
 * `run` on a speculative-decoding target model (QEfficient's TLM: the `num_logits_to_keep` input,
 * logits for the N positions ending at the last valid one). Both paths feed the graph K + 1 tokens
 * per call, K the largest proposal length the export records:
 *
 * - logits (`--dump-logits`): the ids in calls of K + 1, each returning a row per token, so every
 *   row checks one token of the given continuation (a short last call is padded at position −1).
 * - generation: QEfficient's prompt-lookup speculative decoding
 *   (`examples/performance/speculative_decoding/prompt_lookup.py`, quic/efficient-transformers main
 *   ebf55e81: `find_candidate_pred_tokens`, then the target scores `[last token, K proposals]`;
 *   unfilled proposals at position −1; `num_tokens_selected = matching.cumprod().sum() + 1`; the
 *   accepted tokens are the target's own argmax, so the result equals greedy decoding; the next
 *   call starts at the last accepted token). Greedy only (the draft is checked by argmax).
 */
import { PipelineError } from '../errors';

/** One TLM call: `tokens` at `positions` (−1: padding), `keep` logits rows back. */
export type TlmCall = (tokens: number[], positions: number[], keep: number) => Promise<Float32Array[]>;

/** What a speculative generation did. */
export interface SpeculativeStats {
  /** Proposal length K of every decode call (K + 1 tokens each). */
  k: number;
  /** Decode calls made. */
  calls: number;
  /** Tokens accepted per call, summed (QEfficient's `mean_num_accepted_tokens` × calls). */
  accepted: number;
}

/** Index of the largest value (first on ties, like numpy's argmax). */
function argmaxOf(row: Float32Array): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i]! > row[best]!) best = i;
  return best;
}

/**
 * `find_candidate_pred_tokens` (the numpy port of prompt-lookup decoding): for n-gram sizes
 * `maxNgram` … 1, every earlier occurrence of the last n ids whose continuation does not run into
 * the n-gram itself; the longest available continuation (up to `numPred`) wins, the first found
 * among equals. Returns the proposals (`count` of them; the rest is padding the caller masks).
 */
export function findCandidatePredTokens(ids: readonly number[], maxNgram: number, numPred: number): { tokens: number[]; count: number } {
  const len = ids.length;
  let best: number[] = [];
  if (maxNgram <= 0 || numPred <= 0 || maxNgram > len) return { tokens: [], count: 0 };
  for (let n = maxNgram; n >= 1; n--) {
    const tail = ids.slice(len - n);
    for (let idx = 0; idx + n <= len; idx++) {
      if (!tail.every((t, j) => ids[idx + j] === t)) continue;
      const start = idx + n;
      if (start >= len - n) continue; // avoid self-match
      const available = Math.min(len - start, numPred);
      if (available > best.length) {
        best = ids.slice(start, start + available);
        if (best.length === numPred) return { tokens: best, count: best.length };
      }
    }
  }
  return { tokens: best, count: best.length };
}

/** Logit rows for every id, fed K + 1 at a time from position `start` (0: an empty cache). */
export async function tlmLogits(call: TlmCall, ids: readonly number[], k: number): Promise<number[][]> {
  const w = k + 1;
  const out: number[][] = [];
  for (let at = 0; at < ids.length; at += w) {
    const chunk = ids.slice(at, at + w);
    const tokens = chunk.concat(Array(w - chunk.length).fill(0));
    const positions = tokens.map((_, j) => (j < chunk.length ? at + j : -1));
    const rows = await call(tokens, positions, w);
    if (rows.length !== w) throw new PipelineError(`the TLM graph returned ${rows.length} logit rows for num_logits_to_keep ${w}`);
    for (let j = 0; j < chunk.length; j++) out.push(Array.from(rows[j]!));
  }
  return out;
}

/**
 * Continues `seq` (the prompt, in the cache) to `n` new tokens in all, `first` (the prefill's) the
 * first of them; K + 1 tokens per call. No proposal is placed past `lastSlot` (ctx_len − 1): the
 * cache has no slot for it. `onToken` returning true stops the generation after that token.
 */
export async function tlmGenerate(
  call: TlmCall,
  seq: number[],
  first: number,
  n: number,
  k: number,
  lastSlot: number,
  onToken?: (token: number) => boolean | void,
  maxNgram = 3,
): Promise<{ tokens: number[]; stats: SpeculativeStats }> {
  const ids = [...seq, first];
  const out = [first];
  const stats: SpeculativeStats = { k, calls: 0, accepted: 0 };
  // onToken sees each accepted token; true (an end-of-sequence token) stops there
  if (onToken?.(first)) return { tokens: out, stats };
  while (out.length < n) {
    const p = ids.length - 1; // position of the last accepted token, not yet in the cache
    const room = Math.min(k, lastSlot - p);
    const prop = room > 0 ? findCandidatePredTokens(ids, Math.min(maxNgram, ids.length), room) : { tokens: [], count: 0 };
    const tokens = [ids[p]!, ...prop.tokens, ...Array(k - prop.count).fill(0)];
    const positions = tokens.map((_, j) => (j <= prop.count ? p + j : -1));
    const rows = await call(tokens, positions, k + 1);
    const target = rows.map(argmaxOf);
    let accepted = 1;
    while (accepted <= prop.count && prop.tokens[accepted - 1] === target[accepted - 1]) accepted++;
    stats.calls++;
    stats.accepted += accepted;
    for (const t of target.slice(0, Math.min(accepted, n - out.length))) {
      out.push(t);
      ids.push(t);
      if (onToken?.(t)) return { tokens: out, stats };
    }
  }
  return { tokens: out, stats };
}
