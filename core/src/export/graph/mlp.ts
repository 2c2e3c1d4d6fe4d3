/**
 * Feed-forward blocks on 2-D hidden `[N, H]`: gated (Llama family), fused gated (Phi-3),
 * plain (GPT-2), and sparse MoE over the prepared stacked experts (Mixtral, Qwen3-MoE).
 *
 * MoE: the router follows HF exactly (softmax in float32 over all experts, top-k, optional
 * renormalization, cast to the model dtype). The chosen weights are scattered into a dense
 * `[N, E]` routing matrix (zeros elsewhere) and every expert runs as one batched MatMul over
 * the stacked `[E, I, H]` tensors; unchosen experts contribute exact zeros. The graph stays a
 * handful of nodes per layer however many experts there are (128 experts × 48 layers exports
 * in milliseconds), at the cost of computing all experts on ORT — this graph is about
 * structure and weight binding; a serving backend specializes it.
 */
import type { Act, ArchSpec, MlpSpec, MoeSpec } from './arch';
import { activation, cast, linear, split, transpose, unsqueeze, weight, type Ctx } from './ops';

/** The layer's MLP on `x [N, H]`. */
export function mlp(c: Ctx, a: ArchSpec, m: MlpSpec, x: string): string {
  const g = c.g;
  switch (m.kind) {
    case 'gated':
      return linear(c, g.op('Mul', [activation(c, linear(c, x, m.gate), a.act), linear(c, x, m.up)]), m.down);
    case 'gated-fused': {
      const [gate, up] = split(c, linear(c, x, m.gateUp), 1, [m.gateUp.out / 2, m.gateUp.out / 2]);
      return linear(c, g.op('Mul', [activation(c, gate!, a.act), up!]), m.down);
    }
    case 'plain':
      return linear(c, activation(c, linear(c, x, m.fc), a.act), m.proj);
    case 'moe':
      return moe(c, a.hidden, a.act, m, x);
  }
}

function moe(c: Ctx, hidden: number, act: Act, m: MoeSpec, x: string): string {
  const g = c.g;
  const { experts: E, intermediate: I } = m;
  return g.within('moe', () => {
    const router = weight(c, m.router, [E, hidden]);
    const logits = cast(c, g.op('Gemm', [x, router], { transB: 1 }), c.dtype, 'float32'); // [N,E]
    const probs = g.op('Softmax', [logits], { axis: 1 });
    const [topV, topI] = g.opN('TopK', [probs, g.ints([m.topK], 'k')], { axis: 1, largest: 1, sorted: 1 }, 2) as [string, string];
    const chosen = m.normTopK ? g.op('Div', [topV, g.op('ReduceSum', [topV, g.ints([1], 'axes')], { keepdims: 1 })]) : topV;
    const zeros = g.op('Mul', [probs, g.scalar('float32', 0, 'zero')]);
    const dense = cast(c, g.op('ScatterElements', [zeros, topI, chosen], { axis: 1 }), 'float32', c.dtype); // [N,E]
    const route = unsqueeze(c, transpose(c, dense, [1, 0]), [1]); // [E,1,N]

    const xt = transpose(c, x, [1, 0]); // [H,N]
    const gate = g.op('MatMul', [weight(c, m.gate, [E, I, hidden]), xt]); // [E,I,N]
    const up = g.op('MatMul', [weight(c, m.up, [E, I, hidden]), xt]);
    const h = g.op('Mul', [activation(c, gate, act), up]);
    const down = g.op('MatMul', [weight(c, m.down, [E, hidden, I]), h]); // [E,H,N]
    const summed = g.op('ReduceSum', [g.op('Mul', [down, route]), g.ints([0], 'axes')], { keepdims: 0 }); // [H,N]
    return transpose(c, summed, [1, 0]);
  });
}
