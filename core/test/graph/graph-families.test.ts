/**
 * Families without shipped fixtures (Mistral with a sliding window, Qwen3, Gemma, Qwen3-MoE,
 * Llama with llama3 / linear rope scaling and biases, GPT-2 with the `transformer.` prefix):
 * random small checkpoints made in code, the ONNX graph on ONNX Runtime against the
 * independent float64 reference forward (validated against the fixtures in graph.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { archFromConfig, buildCausalLM, checkGraph } from '../../src/export/exporter';
import { referenceForward } from '../support/graph-reference';
import { randomCheckpoint, SYNTHETIC_CONFIGS } from '../support/graph-random';
import { GraphRunner, maxAbsDiff, stackExperts } from '../support/graph-support';

const CTX = 24;
const IDS = [5, 17, 3, 88, 41, 9, 60, 2, 33, 71, 12, 50];

describe('graph builder on families without fixtures (vs float64 reference forward)', () => {
  for (const [name, cfg] of Object.entries(SYNTHETIC_CONFIGS)) {
    // a multimodal layout (Qwen3.5-MoE) keeps the text fields under text_config
    const vocab = (cfg.vocab_size ?? (cfg.text_config as { vocab_size?: number } | undefined)?.vocab_size) as number;
    const ids = IDS.map((i) => i % vocab);

    const rs = cfg.rope_scaling as { type?: string } | undefined;
    if (rs?.type === 'longrope') {
      // HF picks the rope table from max(position_ids)+1 of each call, so a cached prefix keeps
      // the short-factor keys; compare one-call prefills of every prefix (short and long regime).
      it(`${name}: one-call prefill of every prefix matches the reference (short and long factors)`, async () => {
        const raw = randomCheckpoint(cfg, 7);
        const a = archFromConfig(cfg, `${name}/config.json`, { keys: new Set(raw.keys()) });
        const r = await GraphRunner.open(buildCausalLM(a, { dtype: 'float32', ctxLen: CTX }), raw);
        for (let n = 1; n <= ids.length; n++) {
          const ref = referenceForward(cfg, raw, ids.slice(0, n));
          const s = await r.step([ids.slice(0, n)], [ids.slice(0, n).map((_, i) => i)], r.emptyCache(1, a.nKv, CTX, a.headDim));
          expect(maxAbsDiff([s.logits[0]!], [ref[n - 1]!])).toBeLessThanOrEqual(1e-4);
        }
        // and the regimes really differ
        const long = referenceForward(cfg, raw, ids);
        const short = referenceForward({ ...cfg, original_max_position_embeddings: 64, max_position_embeddings: 64 }, raw, ids);
        expect(maxAbsDiff(long, short)).toBeGreaterThan(1e-3);
      });
      continue;
    }

    it(`${name}: token-at-a-time and prefill+decode logits match the reference`, async () => {
      const raw = randomCheckpoint(cfg, 7);
      const prepared = stackExperts(raw);
      const ref = referenceForward(cfg, raw, ids);
      const a = archFromConfig(cfg, `${name}/config.json`, { keys: new Set(prepared.keys()) });
      const g = buildCausalLM(a, { dtype: 'float32', ctxLen: CTX });
      expect(checkGraph(g.model)).toEqual([]);
      const r = await GraphRunner.open(g, prepared);
      const { rows } = await r.tokenByToken(ids, r.emptyCache(1, a.nKv, CTX, a.headDim));
      expect(maxAbsDiff(rows, ref)).toBeLessThanOrEqual(1e-4);
      const s = await r.step([ids.slice(0, 7)], [[0, 1, 2, 3, 4, 5, 6]], r.emptyCache(1, a.nKv, CTX, a.headDim));
      const dec = await r.tokenByToken(ids.slice(7), s.cache, 7);
      expect(maxAbsDiff([s.logits[0]!, ...dec.rows], ref.slice(6))).toBeLessThanOrEqual(1e-4);
    });

    it(`${name}: --dtype float16 within 2e-2`, async () => {
      const raw = randomCheckpoint(cfg, 7);
      const prepared = stackExperts(raw);
      const ref = referenceForward(cfg, raw, ids);
      const a = archFromConfig(cfg, 'config.json', { keys: new Set(prepared.keys()) });
      const r = await GraphRunner.open(buildCausalLM(a, { dtype: 'float16', ctxLen: CTX }), prepared, true);
      const { rows } = await r.tokenByToken(ids, r.emptyCache(1, a.nKv, CTX, a.headDim));
      expect(maxAbsDiff(rows, ref)).toBeLessThanOrEqual(2e-2);
    });
  }

  it('the sliding window is real: mistral without it gives different logits past the window', () => {
    const cfg = SYNTHETIC_CONFIGS.mistral!;
    const raw = randomCheckpoint(cfg, 7);
    const a = referenceForward(cfg, raw, IDS);
    const b = referenceForward({ ...cfg, sliding_window: null }, raw, IDS);
    expect(maxAbsDiff(a.slice(0, 5), b.slice(0, 5))).toBe(0);
    expect(maxAbsDiff(a, b)).toBeGreaterThan(1e-3);
  });
});
