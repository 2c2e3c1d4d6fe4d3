/**
 * The graph explorer's search: a query matches node names, op types and value names (graph
 * inputs, weights, folded constants, inner tensors), case-insensitively. A weight is also found
 * by what its row and the panel call it: its checkpoint key in the spec, and, for QEfficient's
 * packed MoE experts (`<module>.moe_weights.gate`, every expert in one tensor), by
 * `<module>.experts.gate (packed experts)`, so searching "experts" finds them. Each hit names the node
 * to jump to: the node itself, a value's producer, or (for an input, weight or constant, which
 * no node produces) its first consumer. Exact matches come first, then prefix and suffix
 * matches, then the rest in graph order.
 */
import { MOE_WEIGHTS_KEY } from '../artifacts/prepared-keys';
import type { GraphModel } from './graph-data';

/** One search result. */
export interface SearchHit {
  node: number;
  /** What matched: the node's name, its op type, or a value. */
  what: 'node' | 'op' | 'input' | 'weight' | 'const' | 'output' | 'inner';
  /** The matched name. */
  name: string;
}

/**
 * The other names weight `name` is found by: its checkpoint key when that differs, and for a
 * packed MoE tensor `<module>.experts.<role> (packed experts)`.
 */
export function weightAliases(m: GraphModel, name: string): string[] {
  const out: string[] = [];
  const moe = MOE_WEIGHTS_KEY.exec(name);
  if (moe) out.push(`${moe[1]}.experts.${moe[2]}${moe[3] ?? ''} (packed experts)`);
  const key = Object.hasOwn(m.sources, name) ? m.sources[name]!.key : undefined;
  if (key && key !== name) out.push(key);
  return out;
}

/** Lower-cased names, built once per model. */
export class GraphSearch {
  private nodeNames: string[];
  private valueNames: string[];
  /** Weight value → its other names ({@link weightAliases}), as written and lower-cased. */
  private aliases = new Map<number, { name: string; lower: string }[]>();

  constructor(private readonly m: GraphModel) {
    this.nodeNames = m.nodes.map((n) => n.name.toLowerCase());
    this.valueNames = m.values.map((v) => v.name.toLowerCase());
    m.values.forEach((v, i) => {
      if (v.kind !== 'weight') return;
      const a = weightAliases(m, v.name);
      if (a.length)
        this.aliases.set(
          i,
          a.map((name) => ({ name, lower: name.toLowerCase() })),
        );
    });
  }

  /** At most `limit` hits for `query` (empty for a blank query). */
  find(query: string, limit = 100): SearchHit[] {
    const q = query.trim().toLowerCase();
    if (!q) return [];
    const scored: { hit: SearchHit; score: number; order: number }[] = [];
    const score = (name: string) => (name === q ? 0 : name.startsWith(q) || name.endsWith(q) ? 1 : 2);
    const seen = new Set<string>();
    const add = (hit: SearchHit, s: number, order: number) => {
      const k = `${hit.node}:${hit.name}`;
      if (seen.has(k)) return;
      seen.add(k);
      scored.push({ hit, score: s, order });
    };
    this.nodeNames.forEach((name, i) => {
      if (name.includes(q)) add({ node: i, what: 'node', name: this.m.nodes[i]!.name }, score(name), i);
      else if (this.m.nodes[i]!.op.toLowerCase() === q)
        add({ node: i, what: 'op', name: this.m.nodes[i]!.name || this.m.nodes[i]!.op }, 1, i);
    });
    this.valueNames.forEach((name, v) => {
      if (!name.includes(q)) return;
      const val = this.m.values[v]!;
      const node = val.producer >= 0 ? val.producer : val.consumers[0];
      if (node === undefined) return;
      // A value named like its producer (`/layers.3/Mul` out of node `/layers.3/Mul`) is the node's hit already.
      add({ node, what: val.kind, name: val.name }, score(name), node);
    });
    for (const [v, names] of this.aliases) {
      const hit = names.find((a) => a.lower.includes(q));
      const node = this.m.values[v]!.consumers[0];
      if (!hit || node === undefined || this.valueNames[v]!.includes(q)) continue;
      add({ node, what: 'weight', name: hit.name }, score(hit.lower), node);
    }
    scored.sort((a, b) => a.score - b.score || a.order - b.order);
    return scored.slice(0, limit).map((s) => s.hit);
  }
}
