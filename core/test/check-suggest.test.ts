// "Did you mean" ranking for tensor keys.
import { describe, expect, it } from 'vitest';
import { boundedEditDistance, closestNames, commonSuffixSegments, KeyIndex } from '../src/check/suggest';

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
  it('closestNames ignores far-away names', () => {
    expect(closestNames('input_idz', ['input_ids', 'logits'])).toEqual(['input_ids']);
    expect(closestNames('zzz', keys)).toEqual([]);
  });
});
