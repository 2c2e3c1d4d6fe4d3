/**
 * Python's `round()` on a float: halves go to the even neighbour. The processors ported from
 * Hugging Face (Qwen2-VL's `smart_resize`, …) round that way, and both `run` (the image
 * processor) and `compile` (the qaic VLM specializations it sizes) must agree with them, so it
 * lives below both.
 */
export function pyRound(x: number): number {
  const f = Math.floor(x);
  const d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}
