/**
 * The sparse-MoE block over prepared experts in QEfficient's canonical layout
 * (`QEfficient/transformers/moe/weights.py`, quic/efficient-transformers 1b7aa83):
 * `moe_weights.gate`, `.up` `[E, H, I]`, `.down` `[E, I, H]`, optional `.gate_bias`,
 * `.up_bias` `[E, I]` and `.down_bias` `[E, H]` — or, with expert-parallel packing over P
 * pipeline stages, the same tensors as `view(P, N, …).transpose(0, 1)` → `[N, P, …]`.
 *
 * Routing and expert compute are separate so families with their own router (softmax top-k,
 * sigmoid groups, a router bias) reuse the expert half: {@link moeExperts} takes a dense
 * `[T, E]` routing matrix (the chosen weights, zeros elsewhere) and runs every expert as one
 * batched MatMul, `[1, T, H] × [E, H, I] → [E, T, I]`, so a layer is a handful of nodes
 * however many experts there are. Unchosen experts contribute exact zeros. With the packed
 * layout the weights are only reshaped (`[N, P, …]` → `[E, …]`, free) and the routing
 * columns are gathered into the packed expert order instead.
 */
import { packedExpertOrder, type MoeWeights } from './moe-weights';
import { reshape, transpose, unsqueeze, weight, type Ctx } from './ops';

export { canonicalMoeKeys, moeWeightInputs, packedExpertOrder, type MoeWeights } from './moe-weights';

/** Declares one expert tensor (`[E, …slice]`, or packed `[N, P, …slice]`) and returns it as `[E, …slice]`. */
function expertTensor(c: Ctx, key: string, w: MoeWeights, slice: number[]): string {
  const P = w.stages;
  if (!P || P === 1) return weight(c, key, [w.experts, ...slice]);
  return reshape(c, weight(c, key, [w.experts / P, P, ...slice]), [w.experts, ...slice]);
}

/**
 * Softmax top-k routing as in HF Mixtral / Qwen3-MoE: softmax in float32 over all experts,
 * top-k, optional renormalization; the chosen weights scattered into a dense float32 `[T, E]`.
 */
export function softmaxTopK(c: Ctx, logits: string, topK: number, normTopK: boolean): string {
  const g = c.g;
  const probs = g.op('Softmax', [logits], { axis: 1 });
  const [topV, topI] = g.opN('TopK', [probs, g.ints([topK], 'k')], { axis: 1, largest: 1, sorted: 1 }, 2) as [string, string];
  const chosen = normTopK ? g.op('Div', [topV, g.reduce('ReduceSum', topV, [1], 1)]) : topV;
  const zeros = g.op('Mul', [probs, g.scalar('float32', 0, 'zero')]);
  return g.op('ScatterElements', [zeros, topI, chosen], { axis: 1 });
}

/**
 * Every expert on `x [T, H]`, weighted by `route [T, E]` (model dtype) and summed → `[T, H]`.
 * `glu(gate, up)` combines the two projections (`[E, T, I]` each, biases added); the default
 * is `act(gate) · up`. `scaleInput` (Llama 4): the weight multiplies each expert's input
 * (`[E, T, H]`) instead of its output.
 */
export function moeExperts(
  c: Ctx,
  x: string,
  route: string,
  w: MoeWeights,
  glu: (gate: string, up: string) => string,
  scaleInput = false,
): string {
  const g = c.g;
  const { experts: E, hidden: H, intermediate: I } = w;
  const routeColumns = () => {
    const ordered =
      w.stages && w.stages > 1 ? g.op('Gather', [route, g.ints(packedExpertOrder(E, w.stages), 'expert_order')], { axis: 1 }) : route;
    return unsqueeze(c, transpose(c, ordered, [1, 0]), [2]); // [E,T,1]
  };
  const rIn = scaleInput ? routeColumns() : undefined;
  const xb = rIn ? g.op('Mul', [unsqueeze(c, x, [0]), rIn]) : unsqueeze(c, x, [0]); // [E,T,H] | [1,T,H]
  const addBias = (y: string, key: string | undefined, size: number) =>
    key ? g.op('Add', [y, unsqueeze(c, expertTensor(c, key, w, [size]), [1])]) : y; // [E,1,size]
  const gate = addBias(g.op('MatMul', [xb, expertTensor(c, w.gate, w, [H, I])]), w.gateBias, I); // [E,T,I]
  const up = addBias(g.op('MatMul', [xb, expertTensor(c, w.up, w, [H, I])]), w.upBias, I);
  const down = addBias(g.op('MatMul', [glu(gate, up), expertTensor(c, w.down, w, [I, H])]), w.downBias, H); // [E,T,H]
  if (rIn) return g.reduce('ReduceSum', down, [0], 0); // [T,H]
  return g.reduce('ReduceSum', g.op('Mul', [down, routeColumns()]), [0], 0); // [T,H]
}
