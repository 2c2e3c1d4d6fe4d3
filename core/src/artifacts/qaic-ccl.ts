/**
 * QEfficient's compute-context-length (CCL) buckets as its compile lays them out, shared by the
 * causal-LM planner (compile/qaic-command.ts) and the VLM planner (compile/qaic-vlm.ts): data
 * rules beside the plan they feed (qaic-plan.ts), so neither planner reaches into the other.
 */

/** QEfficient's `constants.CCL_MIN_CTX_LEN`: a smaller bucket is raised to it. */
export const CCL_MIN_CTX_LEN = 1024;
/** QEfficient's `constants.CCL_UNIQNE_STEP` (its spelling): a colliding prefill bucket is lowered to a multiple of it. */
export const CCL_UNIQNE_STEP = 32;

/**
 * QEfficient's `process_ccl_specializations` for explicit lists
 * (`QEfficient/utils/check_ccl_specializations.py` `validate_ccl_lists`, quic/efficient-transformers
 * main ebf55e81 and the weight-free PR head 277283b5, the same text; the older `ctx_len - 1` and
 * `val -= 1` forms are from #710, replaced by #825): a missing list is [ctx_len]; each value below
 * CCL_MIN_CTX_LEN is raised to it; ctx_len is appended to a list whose last value is below it;
 * with prefill_seq_len 1 both phases share the sorted union (capped at ctx_len); otherwise each
 * list is capped, deduplicated and sorted, and a prefill value also in the decode list (or already
 * taken) is lowered to the multiple of CCL_UNIQNE_STEP below it until it is unique — the compiler
 * needs distinct specializations.
 */
export function cclLists(
  ccl: { prefill: number[]; decode: number[] },
  ctxLen: number,
  prefillSeqLen: number,
): { prefill: number[]; decode: number[] } {
  const raise = (xs: number[]) => (xs.length ? xs : [ctxLen]).map((x) => Math.max(x, CCL_MIN_CTX_LEN));
  const pre = raise(ccl.prefill);
  const dec = raise(ccl.decode);
  // the last value as given (QEfficient checks ccl_prefill[-1], the list order of the user)
  if (pre[pre.length - 1]! < ctxLen) pre.push(ctxLen);
  if (dec[dec.length - 1]! < ctxLen) dec.push(ctxLen);
  const sorted = (xs: number[]) => [...new Set(xs.map((x) => Math.min(x, ctxLen)))].sort((a, b) => a - b);
  if (prefillSeqLen === 1) {
    const all = sorted([...pre, ...dec]);
    return { prefill: all, decode: all };
  }
  const decode = sorted(dec);
  const prefill: number[] = [];
  for (let v of sorted(pre)) {
    while (decode.includes(v) || prefill.includes(v)) {
      // `(val - 1) // CCL_UNIQNE_STEP * CCL_UNIQNE_STEP` (Python's floor division)
      v = Math.floor((v - 1) / CCL_UNIQNE_STEP) * CCL_UNIQNE_STEP;
      if (v < 0) break;
    }
    if (v >= 0) prefill.push(v);
  }
  return { prefill: prefill.sort((a, b) => a - b), decode };
}
