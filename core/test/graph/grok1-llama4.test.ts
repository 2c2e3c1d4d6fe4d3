/**
 * Grok-1 and Llama 4 beyond the shared fixture suites, through the real CLI (export --config →
 * prepare → compile → run):
 *
 * - every published Llama 4 checkpoint is the multimodal `Llama4ForConditionalGeneration`:
 *   the llama4 fixture nested as `text_config` with its keys under `language_model.` (made in
 *   code) must still give reference.json;
 * - other configurations on bf16 checkpoints made in code (Grok-1 top-3 without model_type,
 *   Llama 4 with another NoPE pattern and MoE step), judged by the independent float64
 *   references (graph-reference-grok1.ts from QEfficient's modeling_grok1.py @ 05274da4,
 *   graph-reference-llama4.ts from HF modeling_llama4.py @ 63210d0e), which are validated
 *   against the fixtures in graph.test.ts;
 * - the features those configurations exercise really change the logits;
 * - config values the builder does not implement are refused by name.
 */
import { readFileSync } from 'node:fs';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliStdout } from '../../../test/support/cli';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { archFromConfig } from '../../src/export/exporter';
import { Checkpoint, writeSafetensors } from '../../src/formats/safetensors';
import { referenceForward } from '../support/graph-reference';
import { SYNTHETIC_CONFIGS, writeRandomModel } from '../support/graph-random';
import { maxAbsDiff } from '../support/graph-support';
import { randomLlama4Checkpoint } from '../support/graph-reference-llama4';
import { randomGrok1Checkpoint } from '../support/graph-reference-grok1';

const tmp = tempDirs('ws-grok-llama4-')();

const ws = (...args: string[]): Promise<string> => cliStdout(tmp, ...args);

/** export → prepare → compile → run --dump-logits of `src` (float32); returns the logits rows and the export dir. */
async function pipeline(src: string, name: string, ids: number[]): Promise<{ rows: number[][]; out: string }> {
  const prepared = path.join(tmp, `${name}-qeff-prepared-float32`);
  const out = path.join(tmp, `${name}-export`);
  await ws('export', '--config', src, '--out', out, '--ctx-len', '24');
  await ws('prepare', '--checkpoint', src, '--dtype', 'float32', '--out', prepared);
  await ws('compile', out, '--prepared', prepared);
  const dump = path.join(tmp, `${name}-logits.json`);
  await ws('run', out, '--input-ids', ids.join(','), '--dump-logits', dump);
  return { rows: (JSON.parse(readFileSync(dump, 'utf8')) as { logits: number[][] }).logits, out };
}

describeFixtures('llama4 multimodal layout (Llama4ForConditionalGeneration) made from the fixture', () => {
  it('text_config + language_model.* keys, no vision_config (the text graph alone): export --config → prepare → compile → run gives reference.json', async () => {
    const fx = path.join(fixturesDir(), 'llama4');
    const text = JSON.parse(readFileSync(path.join(fx, 'config.json'), 'utf8')) as Record<string, unknown>;
    const ref = JSON.parse(readFileSync(path.join(fx, 'reference.json'), 'utf8')) as {
      input_ids: number[];
      generated_ids: number[];
      logits: number[][];
    };
    const src = path.join(tmp, 'llama4-multimodal');
    fs.mkdirSync(src);
    const config = {
      architectures: ['Llama4ForConditionalGeneration'],
      model_type: 'llama4',
      tie_word_embeddings: false,
      text_config: { ...text, architectures: undefined },
    };
    fs.writeFileSync(path.join(src, 'config.json'), JSON.stringify(config));
    const ck = await Checkpoint.open(fx);
    const tensors = [];
    for (const key of ck.keys()) {
      const t = ck.get(key)!;
      tensors.push({ key: `language_model.${key}`, dtype: t.dtype, shape: t.shape, data: await ck.read(key) });
    }
    await writeSafetensors(path.join(src, 'model.safetensors'), tensors);
    const ids = [...ref.input_ids, ...ref.generated_ids.slice(0, -1)];
    const { rows, out } = await pipeline(src, 'llama4-multimodal', ids);
    expect(maxAbsDiff(rows, ref.logits)).toBeLessThanOrEqual(1e-4);
    expect((await ws('run', out, '--input-ids', ref.input_ids.join(','), '--max-new-tokens', '5')).trim()).toBe(
      ref.generated_ids.join(','),
    );
    // the graph reads the prepared keys under language_model.*, the fused experts split by prepare
    const spec = JSON.parse(readFileSync(path.join(out, 'weight_spec.json'), 'utf8')) as { inputs: { location: { key: string } }[] };
    const keys = spec.inputs.map((i) => i.location.key);
    expect(keys).toContain('language_model.model.layers.1.feed_forward.moe_weights.gate');
    expect(keys.every((k) => k.startsWith('language_model.'))).toBe(true);
  }, 120_000);
});

describe('grok1 and llama4 configurations beyond the fixtures, through the CLI, judged by the float64 references', () => {
  for (const name of ['grok1-top3', 'llama4-nope-step3']) {
    it(`${name}: bf16 checkpoint made in code, float32 export → prepare → compile → run`, async () => {
      const cfg = SYNTHETIC_CONFIGS[name]!;
      const src = path.join(tmp, `synthetic-${name}`);
      const raw = await writeRandomModel(src, cfg, 13);
      const ids = [4, 19, 33, 7, 61, 2, 45, 12, 28, 90, 3];
      const { rows } = await pipeline(src, name, ids);
      expect(maxAbsDiff(rows, referenceForward(cfg, raw, ids))).toBeLessThanOrEqual(1e-4);
    }, 120_000);
  }
});

describe('the features the other configurations exercise change the logits (the tests can fail)', () => {
  const ids = [4, 19, 33, 7, 61, 2, 45, 12, 28, 90, 3, 17];
  const differs = (a: number[][], b: number[][]) => maxAbsDiff(a, b) > 1e-3;
  it('llama4: chunking, NoPE layers, temperature tuning, q/k norm, the MoE step and top-k each matter', () => {
    const cfg = SYNTHETIC_CONFIGS['llama4-nope-step3']!;
    const raw = randomLlama4Checkpoint(cfg, 5);
    const base = referenceForward(cfg, raw, ids);
    expect(differs(base, referenceForward({ ...cfg, attention_chunk_size: 64 }, raw, ids))).toBe(true);
    expect(differs(base, referenceForward({ ...cfg, attn_temperature_tuning: false }, raw, ids))).toBe(true);
    expect(differs(base, referenceForward({ ...cfg, use_qk_norm: false }, raw, ids))).toBe(true);
    expect(differs(base, referenceForward({ ...cfg, no_rope_layers: [1, 1, 1, 1, 1, 1] }, raw, ids))).toBe(true);
    expect(differs(base, referenceForward({ ...cfg, num_experts_per_tok: 1 }, raw, ids))).toBe(true);
  });
  it('grok1: top-3 differs from top-2; the soft cap and the multipliers matter', () => {
    const cfg = SYNTHETIC_CONFIGS['grok1-top3']!;
    const raw = randomGrok1Checkpoint(cfg, 5);
    const base = referenceForward(cfg, raw, ids);
    expect(differs(base, referenceForward({ ...cfg, num_experts_per_tok: 2 }, raw, ids))).toBe(true);
    expect(differs(base, referenceForward({ ...cfg, max_attn_value: 1000 }, raw, ids))).toBe(true);
    expect(differs(base, referenceForward({ ...cfg, embedding_multiplier_scale: 1 }, raw, ids))).toBe(true);
  });
});

describe('grok1 / llama4 config values the builder does not implement are refused by name', () => {
  const grok = SYNTHETIC_CONFIGS['grok1-top3']!;
  const l4 = SYNTHETIC_CONFIGS['llama4-nope-step3']!;
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['grok1 hidden_act other than exact GELU', { ...grok, hidden_act: 'silu' }, /"hidden_act" "silu" is not Grok-1's exact GELU/],
    ['grok1 top-k above the experts', { ...grok, num_experts_per_tok: 7 }, /"num_experts_per_tok" \(7\) exceeds/],
    ['grok1 rope_scaling', { ...grok, rope_scaling: { rope_type: 'linear', factor: 2 } }, /"rope_scaling" is set/],
    ['llama4 unknown layer type', { ...l4, layer_types: Array(6).fill('sliding_attention') }, /"layer_types" entry "sliding_attention"/],
    ['llama4 chunked layers without a chunk size', { ...l4, attention_chunk_size: null }, /"attention_chunk_size" is null/],
    ['llama4 no_rope_layers too short', { ...l4, no_rope_layers: [1, 0] }, /"no_rope_layers" has 2 entries for 6 layers/],
    ['llama4 multimodal without text_config', { model_type: 'llama4' }, /"text_config" is missing/],
  ];
  for (const [what, cfg, re] of cases) it(what, () => expect(() => archFromConfig(cfg, 'x/config.json')).toThrow(re));
  it('grok1 without model_type and not tied, checkpoint without lm_head: refused; tied: the embeddings are the head', () => {
    const keys = new Set(['model.embed_tokens.weight']);
    expect(() => archFromConfig({ ...grok, tie_word_embeddings: false }, 'c.json', { keys })).toThrow(/"tie_word_embeddings" is false/);
    expect(archFromConfig(grok, 'c.json', { keys }).lmHead).toBeUndefined();
  });
});
