// "Did you mean" ranking for tensor keys.
import { describe, expect, it } from 'vitest';
import { boundedEditDistance, closestNames, commonSuffixSegments, KeyIndex } from '../../src/check/suggest';
import { rng } from '../../src/foundation/rng';

const keys = [
  'model.embed_tokens.weight',
  'model.layers.0.self_attn.q_proj.weight',
  'model.layers.0.self_attn.k_proj.weight',
  'model.layers.0.mlp.gate_proj.weight',
  'model.layers.1.mlp.gate_proj.weight',
  'model.norm.weight',
  'lm_head.weight',
  'wte.weight',
];

describe('edit distance', () => {
  it('is Levenshtein, bounded', () => {
    expect(boundedEditDistance('kitten', 'sitting', 5)).toBe(3);
    expect(boundedEditDistance('abc', 'abc', 0)).toBe(0);
    expect(boundedEditDistance('a', 'abcdef', 2)).toBe(3); // > max → max + 1
    expect(boundedEditDistance('flaw', 'lawn', 2)).toBe(2);
  });
  it('counts shared trailing segments', () => {
    expect(commonSuffixSegments('a.b.c.weight', 'x.b.c.weight')).toBe(3);
    expect(commonSuffixSegments('a.weight', 'a.bias')).toBe(0);
  });
});

describe('KeyIndex', () => {
  const idx = new KeyIndex(keys);
  it('finds a one-segment typo without a scan', () => {
    expect(idx.closest('model.layers.0.mlp.gate_prj.weight', 3, false)[0]).toBe('model.layers.0.mlp.gate_proj.weight');
  });
  it('finds prefix variants both ways without a scan', () => {
    expect(idx.closest('transformer.wte.weight', 3, false)).toEqual(['wte.weight']);
    expect(idx.closest('embed_tokens.weight', 3, false)[0]).toBe('model.embed_tokens.weight');
  });
  it('ranks a wrong layer number behind a same-layer typo', () => {
    // gate_proj in layer 2 does not exist: layers 0 and 1 are both one segment off.
    expect(idx.closest('model.layers.2.mlp.gate_proj.weight', 3, false)).toEqual([
      'model.layers.0.mlp.gate_proj.weight',
      'model.layers.1.mlp.gate_proj.weight',
    ]);
  });
  it('falls back to a scan only when allowed', () => {
    expect(idx.closest('lm_heads.weights', 3, false)).toEqual([]);
    expect(idx.closest('lm_heads.weights', 3, true)).toEqual(['lm_head.weight']);
    let asked = 0;
    idx.closest('model.layers.0.mlp.gate_prj.weight', 3, () => (asked++, true));
    expect(asked).toBe(0); // lookups found it: no scan budget spent
  });
  it('nearby() is exactly its definition, on 3,000 generated keys and 600 wanted names (hashed tables, verified candidates)', () => {
    // The definition, by brute force: keys differing from `wanted` in exactly one dot-segment,
    // keys ending in `.wanted`, and proper segment suffixes of `wanted` that are keys.
    const r = rng(5);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
    const parts = ['model', 'layers', 'mlp', 'self_attn', 'q_proj', 'k_proj', 'gate_proj', 'weight', 'bias', 'norm', 'transformer', 'h'];
    const make = () =>
      Array.from({ length: 1 + Math.floor(r() * 6) }, () => (r() < 0.3 ? String(Math.floor(r() * 12)) : pick(parts))).join('.');
    const all = [...new Set(Array.from({ length: 3000 }, make))];
    const index = new KeyIndex(all);
    const brute = (wanted: string): string[] => {
      const w = wanted.split('.');
      const out = new Set<string>();
      for (const k of all) {
        const s = k.split('.');
        if (s.length === w.length && s.filter((x, i) => x !== w[i]).length === 1) out.add(k);
        if (k.endsWith(`.${wanted}`)) out.add(k);
      }
      for (let j = 1; j < w.length; j++) if (all.includes(w.slice(j).join('.'))) out.add(w.slice(j).join('.'));
      out.delete(wanted);
      return [...out].sort();
    };
    for (let t = 0; t < 600; t++) {
      const wanted = t % 3 === 0 ? pick(all) : make();
      expect(index.nearby(wanted).sort(), wanted).toEqual(brute(wanted));
    }
  });
  it('closestNames ignores far-away names', () => {
    expect(closestNames('input_idz', ['input_ids', 'logits'])).toEqual(['input_ids']);
    expect(closestNames('zzz', keys)).toEqual([]);
  });
});
