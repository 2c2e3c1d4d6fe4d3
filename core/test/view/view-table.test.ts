// The checkpoint viewer's filter and cell text (issue 36 items 4 and 5, issue 50 item 6): a term
// matches any part of a key but numbers whole (experts.12 is not experts.120), globs and /regex/, middle ellipsis keeping a key's end, and
// shard labels showing the part of the file names that differs. Rows come from the generated
// 48-layer MoE key list (test/support/sparse-checkpoint.mjs), the same the e2e run opens.
import { describe, expect, it } from 'vitest';
import { compileTensorFilter, FILTER_PLACEHOLDER, type FilterFields } from '../../src/view/tensor-filter';
import { middleEllipsis, shardLabels } from '../../src/view/table-text';
import { qwen3MoeTensors } from '../../../test/support/sparse-checkpoint.mjs';

const rows: FilterFields[] = qwen3MoeTensors({ layers: 2 }).map((t: { key: string; dtype: string; shape: number[] }, i: number) => ({
  key: t.key,
  dtype: t.dtype,
  shape: t.shape,
  shard: `model-0000${(i % 3) + 1}-of-00003.safetensors`,
}));
const keys = (q: string) => rows.filter((r) => compileTensorFilter(q).test(r)).map((r) => r.key);

describe('the tensor filter', () => {
  it('matches any part of a key, but a number at either edge whole: experts.12 is not experts.120–127', () => {
    const got = keys('experts.12');
    expect(got.length).toBeGreaterThan(0);
    expect(got.every((k) => k.includes('.experts.12.'))).toBe(true);
    expect(got.some((k) => /experts\.12\d/.test(k))).toBe(false);
    // The same expert in both layers, all of its projections.
    expect(keys('layers.1 experts.12.down_proj')).toEqual(['model.layers.1.mlp.experts.12.down_proj.weight']);
    // A segment's part matches as typed (issue 50: "embed" found nothing when segments were whole).
    expect(keys('embed')).toEqual(['model.embed_tokens.weight']);
    expect(keys('down_pr')).toHaveLength(2 * 128);
    expect(keys('down_pr').every((k) => k.endsWith('.down_proj.weight'))).toBe(true);
    expect(keys('xperts.12.dow')).toHaveLength(2);
    // A number is whole at either edge: layers.1 is not layers.10+, 2.down_proj not 12.down_proj.
    expect(keys('layers.1').every((k) => k.startsWith('model.layers.1.'))).toBe(true);
    expect(keys('layers.1').length).toBeGreaterThan(128);
    expect(keys('2.down_proj').every((k) => /\.experts\.2\.down_proj\./.test(k))).toBe(true);
    expect(keys('2.down_proj')).toHaveLength(2);
  });

  it('offers * within a segment and ** across segments', () => {
    const twelves = keys('experts.12*.down_proj');
    expect(twelves).toHaveLength(2 * 9); // 12, 120–127 in two layers
    expect(keys('experts.*.down_proj')).toHaveLength(2 * 128);
    expect(keys('*norm*').every((k) => /norm/.test(k))).toBe(true);
    expect(keys('*norm*').length).toBeGreaterThan(4);
    // * stays inside a segment; ** crosses them.
    expect(keys('layers.*.down_proj')).toEqual([]);
    expect(keys('layers.1.**.down_proj')).toHaveLength(128);
  });

  it('takes /regex/ with flags, including spaces, and reports a bad one', () => {
    expect(keys('/experts\\.12[0-3]\\.up/')).toHaveLength(2 * 4);
    expect(keys('/Q_PROJ/')).toHaveLength(2); // case-insensitive without flags
    expect(keys('/Q_PROJ/u')).toEqual([]); // flags given: as written
    expect(keys('/embed_tokens|lm_head/')).toEqual(['model.embed_tokens.weight', 'lm_head.weight']);
    const bad = compileTensorFilter('/experts.(12/');
    expect(bad.error).toMatch(/^\/experts\.\(12\/: .*(unterminated|group)/i);
    expect(rows.some((r) => bad.test(r))).toBe(false);
  });

  it('matches a dtype, a shard and a dim exactly, and every term must match', () => {
    expect(keys('bf16')).toHaveLength(rows.length);
    expect(keys('f16')).toEqual([]);
    const shard2 = rows.filter((r) => r.shard.includes('00002')).map((r) => r.key);
    expect(keys('00002')).toEqual(shard2);
    expect(keys('151936').sort()).toEqual(['lm_head.weight', 'model.embed_tokens.weight']);
    expect(keys('15193')).toEqual([]);
    expect(keys('0002')).toEqual([]); // a shard's number is whole too
    expect(keys('lm_head.weight 00001')).toEqual(
      rows.filter((r) => r.key === 'lm_head.weight' && r.shard.includes('00001')).map((r) => r.key),
    );
    const all = compileTensorFilter('   ');
    expect(all.empty).toBe(true);
    expect(rows.every((r) => all.test(r))).toBe(true);
  });

  it('says its syntax in the placeholder', () => {
    expect(FILTER_PLACEHOLDER).toContain('*');
    expect(FILTER_PLACEHOLDER).toContain('/regex/');
    expect(FILTER_PLACEHOLDER).toContain('any part of a key');
  });
});

describe('cell text', () => {
  it('cuts keys in the middle and keeps their end', () => {
    const k = 'model.layers.47.mlp.experts.127.gate_proj.weight';
    expect(middleEllipsis(k, 100)).toBe(k);
    const cut = middleEllipsis(k, 30);
    expect(cut).toHaveLength(30);
    expect(cut).toContain('…');
    expect(cut.endsWith('127.gate_proj.weight')).toBe(true);
    expect(cut.startsWith('model.')).toBe(true);
  });

  it('labels shards by the part that differs', () => {
    expect(shardLabels(['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'])).toEqual(['00001', '00002']);
    const sixteen = Array.from({ length: 16 }, (_, i) => `model-${String(i + 1).padStart(5, '0')}-of-00016.safetensors`);
    expect(shardLabels(sixteen)[15]).toBe('00016');
    expect(shardLabels(['a/x.safetensors', 'b/x.safetensors'])).toEqual(['a', 'b']);
    expect(shardLabels(['model.safetensors'])).toEqual(['model.safetensors']);
    // Cuts fall on separators only: a name that starts another keeps its whole token.
    expect(shardLabels(['w.safetensors', 'w-2.safetensors'])).toEqual(['w', 'w-2']);
    // Names that do not tell the shards apart stay whole.
    expect(shardLabels(['a.safetensors', 'a.safetensors'])).toEqual(['a.safetensors', 'a.safetensors']);
  });
});
