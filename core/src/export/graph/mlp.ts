/**
 * Feed-forward blocks on 2-D hidden `[N, H]`: gated (Llama family), fused gated (Phi-3),
 * plain (GPT-2), and sparse MoE over the prepared experts in QEfficient's canonical layout
 * (Mixtral, Qwen3-MoE; the block itself lives in `moe.ts`, shared with other MoE families).
 */
import type { ArchSpec, MlpSpec } from './arch';
import { softmaxMoe } from './moe';
import { activation, linear, split, type Ctx } from './ops';

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
      return softmaxMoe(c, x, { router: m.router, topK: m.topK, normTopK: m.normTopK, act: a.act, weights: m.weights });
  }
}
