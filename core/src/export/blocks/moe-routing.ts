/**
 * MoE routers and expert activations beyond Mixtral's softmax top-k, each a port of its HF
 * modeling file (eager path):
 *
 * - `topk-softmax` — GPT-OSS `GptOssTopKRouter` (logits with bias, top-k of the logits, softmax
 *   over those k) and GraniteMoE `GraniteMoeTopKGating` (the same without bias).
 * - `sigmoid-group` — GLM-4-MoE `Glm4MoeMoE.route_tokens_to_experts`: float32 logits, sigmoid,
 *   choice on sigmoid + `e_score_correction_bias` within the `topk_group` best of `n_group`
 *   groups (group score = sum of its top 2; experts of other groups are masked to 0.0, as HF's
 *   `masked_fill` does), weights = the unbiased sigmoid of the chosen experts, renormalized
 *   (+1e-20) when `norm_topk_prob`, times `routed_scaling_factor`.
 *
 * - `topk-sigmoid` — Llama 4 `Llama4Router`: top-k of the logits, sigmoid of those, the others
 *   0 (σ(−∞)); with `routeScalesInput` the weight scales each expert's input.
 *
 * Every router returns a dense float32 `[T, E]` routing matrix (the chosen weights, zeros
 * elsewhere), so one batched expert block (`moe.ts` {@link moeExperts}) serves them all.
 */
import type { MoeSpec } from './arch';
import type { Act } from './arch';
import { moeExperts, softmaxTopK } from './moe';
import { activation, cast, linear, reshape, weight, type Ctx } from './ops';

/** Router logits `[T, E]` in float32 for `x [T, H]`. */
function routerLogits(c: Ctx, hidden: number, m: MoeSpec, x: string): string {
  const g = c.g;
  const w = weight(c, m.router, [m.weights.experts, hidden]);
  if (m.routing === 'sigmoid-group') {
    // HF: F.linear(hidden_states.type(torch.float32), self.weight.type(torch.float32))
    return g.op('Gemm', [cast(c, x, c.dtype, 'float32'), cast(c, w, c.dtype, 'float32')], { transB: 1 });
  }
  const ins = [x, w];
  if (m.routerBias) ins.push(weight(c, m.routerBias, [m.weights.experts]));
  return cast(c, g.op('Gemm', ins, { transB: 1 }), c.dtype, 'float32');
}

/** The dense float32 routing matrix `[T, E]` of `m` for `x [T, H]`. */
export function routeTokens(c: Ctx, hidden: number, m: MoeSpec, x: string): string {
  const g = c.g;
  const logits = routerLogits(c, hidden, m, x);
  const k = () => g.ints([m.topK], 'k');
  const zeros = () => g.op('Mul', [logits, g.scalar('float32', 0, 'zero')]);
  switch (m.routing ?? 'softmax') {
    case 'softmax':
      return softmaxTopK(c, logits, m.topK, m.normTopK);
    case 'topk-softmax': {
      const [topV, topI] = g.opN('TopK', [logits, k()], { axis: 1, largest: 1, sorted: 1 }, 2) as [string, string];
      return g.op('ScatterElements', [zeros(), topI, g.op('Softmax', [topV], { axis: 1 })], { axis: 1 });
    }
    case 'sigmoid-group':
      return sigmoidGroupRoute(c, m, logits, zeros());
    case 'topk-sigmoid': {
      // Llama 4 `Llama4Router`: top-k of the logits, σ of those; the rest σ(−∞) = 0
      const [topV, topI] = g.opN('TopK', [logits, k()], { axis: 1, largest: 1, sorted: 1 }, 2) as [string, string];
      return g.op('ScatterElements', [zeros(), topI, g.op('Sigmoid', [topV])], { axis: 1 });
    }
  }
}

function sigmoidGroupRoute(c: Ctx, m: MoeSpec, logits: string, zeros: string): string {
  const g = c.g;
  const grp = m.group!;
  const scores = g.op('Sigmoid', [logits]);
  const bias = cast(c, weight(c, grp.correctionBias, [m.weights.experts]), c.dtype, 'float32');
  let forChoice = g.op('Add', [scores, bias]);
  if (grp.nGroup > 1 && grp.topkGroup < grp.nGroup) {
    const per = m.weights.experts / grp.nGroup;
    const grouped = reshape(c, forChoice, [-1, grp.nGroup, per]); // [T,G,E/G]
    const [top2] = g.opN('TopK', [grouped, g.ints([2], 'k2')], { axis: -1, largest: 1, sorted: 1 }, 2) as [string, string];
    const groupScores = g.op('ReduceSum', [top2, g.ints([-1], 'axes')], { keepdims: 0 }); // [T,G]
    const [, groupIdx] = g.opN('TopK', [groupScores, g.ints([grp.topkGroup], 'kg')], { axis: 1, largest: 1, sorted: 1 }, 2) as [
      string,
      string,
    ];
    const groupZeros = g.op('Mul', [groupScores, g.scalar('float32', 0, 'zero')]);
    const ones = g.op('Add', [g.op('GatherElements', [groupZeros, groupIdx], { axis: 1 }), g.scalar('float32', 1, 'one')]);
    const groupMask = g.op('ScatterElements', [groupZeros, groupIdx, ones], { axis: 1 }); // [T,G] 1 = kept
    const expertMask = reshape(c, g.op('Expand', [g.op('Unsqueeze', [groupMask, g.ints([-1], 'axes')]), g.ints([1, grp.nGroup, per])]), [
      -1,
      m.weights.experts,
    ]);
    forChoice = g.op('Where', [g.op('Greater', [expertMask, g.scalar('float32', 0, 'zero')]), forChoice, g.scalar('float32', 0, 'zero')]);
  }
  const [, topI] = g.opN('TopK', [forChoice, g.ints([m.topK], 'k')], { axis: 1, largest: 1, sorted: 1 }, 2) as [string, string];
  let w = g.op('GatherElements', [scores, topI], { axis: 1 });
  if (m.normTopK)
    w = g.op('Div', [w, g.op('Add', [g.op('ReduceSum', [w, g.ints([1], 'axes')], { keepdims: 1 }), g.scalar('float32', 1e-20, 'eps20')])]);
  if (grp.scale !== 1) w = g.op('Mul', [w, g.scalar('float32', grp.scale, 'routed_scale')]);
  return g.op('ScatterElements', [zeros, topI, w], { axis: 1 });
}

/**
 * The expert activation: `act(gate) · up`, or GPT-OSS's clamped SwiGLU
 * (HF `GptOssExperts.forward`): gate clamped above at `limit`, up to ±limit,
 * `(up + 1) · gate · σ(α · gate)`.
 */
export function expertGlu(c: Ctx, m: MoeSpec, act: Act): (gate: string, up: string) => string {
  const g = c.g;
  const sw = m.clampedSwiglu;
  if (!sw) return (gate, up) => g.op('Mul', [activation(c, gate, act), up]);
  return (gate, up) => {
    const lim = g.scalar(c.dtype, sw.limit, 'swiglu_limit');
    const gc = g.op('Min', [gate, lim]);
    const uc = g.op('Max', [g.op('Min', [up, lim]), g.scalar(c.dtype, -sw.limit, 'swiglu_neg_limit')]);
    const glu = g.op('Mul', [gc, g.op('Sigmoid', [g.op('Mul', [gc, g.scalar(c.dtype, sw.alpha, 'swiglu_alpha')])])]);
    return g.op('Mul', [g.op('Add', [uc, g.scalar(c.dtype, 1, 'one')]), glu]);
  };
}

/** GLM-4-MoE / Qwen3.5-MoE shared experts on `x [T, H]` (a plain gated MLP, Qwen3.5 gated by a sigmoid), or undefined. */
export function sharedExperts(c: Ctx, m: MoeSpec, act: Act, x: string): string | undefined {
  const s = m.shared;
  if (!s) return undefined;
  const g = c.g;
  return g.within('shared', () => {
    const y = linear(c, g.op('Mul', [activation(c, linear(c, x, s.gate), act), linear(c, x, s.up)]), s.down);
    if (!m.sharedGate) return y;
    // Qwen3.5-MoE: sigmoid(shared_expert_gate(x)) · shared_expert(x)
    const gate = g.op('Gemm', [x, weight(c, m.sharedGate, [1, m.weights.hidden])], { transB: 1 }); // [T,1]
    return g.op('Mul', [g.op('Sigmoid', [gate]), y]);
  });
}

/**
 * The whole sparse-MoE block of a layer on `x [T, H]`: router → dense routing → every expert
 * over the canonical prepared layout ({@link moeExperts}) with the family's activation → plus
 * the shared experts, if any.
 */
export function routedMoe(c: Ctx, hidden: number, act: Act, m: MoeSpec, x: string): string {
  const g = c.g;
  return g.within('moe', () => {
    const route = cast(c, routeTokens(c, hidden, m, x), 'float32', c.dtype);
    const routed = moeExperts(c, x, route, m.weights, expertGlu(c, m, act), !!m.routeScalesInput);
    const shared = sharedExperts(c, m, act, x);
    return shared ? g.op('Add', [routed, shared]) : routed;
  });
}
