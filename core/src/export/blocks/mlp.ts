/**
 * Feed-forward blocks on 2-D hidden `[N, H]`: gated (Llama family), fused gated (Phi-3),
 * plain (GPT-2), and sparse MoE over the prepared experts in QEfficient's canonical layout
 * (the expert block lives in `moe.ts`, the routers of each family in `moe-routing.ts`).
 */
import type { ArchSpec, MlpSpec } from './arch';
import { routedMoe } from './moe-routing';
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
      return routedMoe(c, a.hidden, a.act, m, x);
  }
}
