/**
 * Qwen3.5-MoE (Gated DeltaNet hybrid) against references: the fixture's reference.json and, for
 * another configuration (a pattern ending on a linear layer, 3 value heads per key head, dk ≠ dv,
 * conv kernel 3, top-3, prompts past one 64-token chunk), the independent float64 reference
 * graph-reference-qwen35.ts (HF's token-by-token recurrence) on random checkpoints made here.
 *
 * Ported from huggingface/transformers src/transformers/models/qwen3_5_moe/modeling_qwen3_5_moe.py
 * @ 5fd974ea3af798c79b3b70d2fd9e52fb58869894 and configuration_qwen3_5_moe.py @
 * e36255cb9af68ea2c16fefd6b1c798882cafda16; graph interface (conv_state / recurrent_state and
 * their _RetainedState outputs, batch_index, zeroed at position 0, padding at position −1) as
 * quic/efficient-transformers QEfficient/transformers/models/qwen3_5_moe/modeling_qwen3_5_moe.py
 * @ b2b87913f4d59bd53b300f72bbeaf0acb4e43012.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { archFromConfig, buildCausalLM, checkGraph } from '../../src/export/exporter';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import {
  multimodalCheckpoint,
  multimodalConfig,
  QWEN35_OTHER,
  qwen35MoeReference,
  randomQwen35Checkpoint,
} from '../support/graph-reference-qwen35';
import { argmax, GraphRunner, loadCheckpoint, maxAbsDiff, stackExperts, type F32 } from '../support/graph-support';

const CTX = 96;

const ids70 = Array.from({ length: 70 }, (_, i) => (i * 37 + 11) % 96);

async function open(cfg: Record<string, unknown>, w: Map<string, F32>, opts: { phase?: 'both' | 'prefill' | 'decode'; cb?: number } = {}) {
  const prepared = stackExperts(w);
  const a = archFromConfig(cfg, 'config.json', { keys: new Set(prepared.keys()) });
  const g = buildCausalLM(a, {
    dtype: 'float32',
    ctxLen: CTX,
    ...(opts.phase ? { phase: opts.phase } : {}),
    ...(opts.cb ? { continuousBatching: true, batchSize: opts.cb } : {}),
  });
  expect(checkGraph(g.model)).toEqual([]);
  const r = await GraphRunner.open(g, prepared);
  return { r, empty: (b = 1) => r.emptyCache(b, a.nKv, CTX, a.headDim) };
}

/** Feeds `ids` in calls of the given sizes (positions from 0); each call's logits row. */
async function inPieces(r: GraphRunner, cache: Awaited<ReturnType<GraphRunner['step']>>['cache'], ids: number[], sizes: number[], pad = 0) {
  const rows: number[][] = [];
  let at = 0;
  for (const n of sizes) {
    const piece = ids.slice(at, at + n);
    const width = Math.max(n, pad);
    const padded = [...piece, ...Array(width - n).fill(0)];
    const pos = padded.map((_, k) => (k < n ? at + k : -1));
    const s = await r.step([padded], [pos], cache);
    rows.push(s.logits[0]!);
    cache = s.cache;
    at += n;
  }
  return { rows, cache };
}

describeFixtures('qwen3_5_moe fixture: prefill, decode and split prompts', () => {
  const dir = () => path.join(fixturesDir(), 'qwen3_5_moe');
  const ref = () =>
    JSON.parse(readFileSync(path.join(dir(), 'reference.json'), 'utf8')) as {
      input_ids: number[];
      generated_ids: number[];
      logits: number[][];
    };

  it('the prompt at once, in pieces of 3, 3, 1 and in 3-token calls padded at position −1 give the reference; decode reproduces generated_ids', async () => {
    const cfg = JSON.parse(readFileSync(path.join(dir(), 'config.json'), 'utf8'));
    const { r, empty } = await open(cfg, await loadCheckpoint(dir()));
    const f = ref();
    const n = f.input_ids.length;
    for (const [sizes, pad] of [
      [[n], 0],
      [[3, 3, 1], 0],
      [[3, 3, 1], 3],
    ] as const) {
      const pre = await inPieces(r, empty(), f.input_ids, [...sizes], pad);
      expect(maxAbsDiff([pre.rows.at(-1)!], [f.logits[n - 1]!])).toBeLessThanOrEqual(1e-4);
      let cache = pre.cache;
      let last = pre.rows.at(-1)!;
      const gen: number[] = [];
      for (let t = 0; t < f.generated_ids.length; t++) {
        gen.push(argmax(last));
        const s = await r.step([[gen[t]!]], [[n + t]], cache);
        if (t + 1 < f.generated_ids.length) expect(maxAbsDiff([s.logits[0]!], [f.logits[n + t]!])).toBeLessThanOrEqual(1e-4);
        last = s.logits[0]!;
        cache = s.cache;
      }
      expect(gen).toEqual(f.generated_ids);
    }
  });

  it('the published multimodal layout (text_config, model.language_model.* keys, visual and mtp tensors) exports the same text model', async () => {
    const cfg = JSON.parse(readFileSync(path.join(dir(), 'config.json'), 'utf8'));
    const mm = multimodalCheckpoint(await loadCheckpoint(dir()));
    const nested = multimodalConfig(cfg);
    const prepared = stackExperts(mm);
    const a = archFromConfig(nested, 'config.json', { keys: new Set(prepared.keys()) });
    const g = buildCausalLM(a, { dtype: 'float32', ctxLen: 32 });
    expect(g.weights.every((w) => w.name.startsWith('model.language_model.') || w.name === 'lm_head.weight')).toBe(true);
    const r = await GraphRunner.open(g, prepared);
    const f = ref();
    const { rows } = await r.tokenByToken([...f.input_ids, ...f.generated_ids.slice(0, -1)], r.emptyCache(1, a.nKv, 32, a.headDim));
    expect(maxAbsDiff(rows, f.logits)).toBeLessThanOrEqual(1e-4);
  });
});

describe('qwen3_5_moe, another configuration, vs the float64 token-by-token reference', () => {
  const raw = randomQwen35Checkpoint(QWEN35_OTHER, 5);
  const ref = qwen35MoeReference(QWEN35_OTHER, raw, ids70);

  it('token by token (the recurrent step) and the prefill/decode phase graphs', async () => {
    for (const phase of ['both', 'decode'] as const) {
      const { r, empty } = await open(QWEN35_OTHER, raw, { phase });
      const { rows } = await r.tokenByToken(ids70.slice(0, 12), empty());
      expect(maxAbsDiff(rows, ref.slice(0, 12))).toBeLessThanOrEqual(1e-4);
    }
  });

  it('one-call prefill over two 64-token chunks, then decode; a prompt split 5 + 64 + 1 and padded 8-token calls', async () => {
    for (const phase of ['both', 'prefill'] as const) {
      const { r, empty } = await open(QWEN35_OTHER, raw, { phase });
      const s = await r.step([ids70.slice(0, 68)], [ids70.slice(0, 68).map((_, i) => i)], empty());
      expect(maxAbsDiff([s.logits[0]!], [ref[67]!])).toBeLessThanOrEqual(1e-4);
      const split = await inPieces(r, empty(), ids70, [5, 64, 1]);
      expect(maxAbsDiff(split.rows, [ref[4]!, ref[68]!, ref[69]!])).toBeLessThanOrEqual(1e-4);
      const padded = await inPieces(r, empty(), ids70.slice(0, 21), [8, 8, 5], 8);
      expect(maxAbsDiff(padded.rows, [ref[7]!, ref[15]!, ref[20]!])).toBeLessThanOrEqual(1e-4);
    }
    const { r, empty } = await open(QWEN35_OTHER, raw);
    const s = await r.step([ids70.slice(0, 66)], [ids70.slice(0, 66).map((_, i) => i)], empty());
    const dec = await r.tokenByToken(ids70.slice(66), s.cache, 66);
    expect(maxAbsDiff(dec.rows, ref.slice(66))).toBeLessThanOrEqual(1e-4);
  });

  it('position 0 in a call starts from zero states; continuous batching keeps each slot its own states', async () => {
    const { r, empty } = await open(QWEN35_OTHER, raw, { cb: 3 });
    const B = ids70.slice(20, 30);
    const refB = qwen35MoeReference(QWEN35_OTHER, raw, B);
    // slot 1 first holds another sequence; B restarting at position 0 there must not see it
    let cache = (await r.step([ids70.slice(0, 6)], [[0, 1, 2, 3, 4, 5]], empty(3), [1])).cache;
    const a = await r.step([ids70.slice(0, 4)], [[0, 1, 2, 3]], cache, [2]);
    const b = await r.step([B.slice(0, 4)], [[0, 1, 2, 3]], a.cache, [1]);
    cache = b.cache;
    const rowsA = [a.logits[0]!];
    const rowsB = [b.logits[0]!];
    for (let t = 4; t < 10; t++) {
      const s = await r.step([[ids70[t]!], [B[t]!]], [[t], [t]], cache, [2, 1]);
      rowsA.push(s.logits[0]!);
      rowsB.push(s.logits[1]!);
      cache = s.cache;
    }
    expect(maxAbsDiff(rowsA, ref.slice(3, 10))).toBeLessThanOrEqual(1e-4);
    expect(maxAbsDiff(rowsB, refB.slice(3))).toBeLessThanOrEqual(1e-4);
  });

  it('the reference is not trivially satisfied: another kernel or head sharing changes the logits', () => {
    const other = qwen35MoeReference({ ...QWEN35_OTHER, num_experts_per_tok: 2 }, raw, ids70.slice(0, 8));
    expect(maxAbsDiff(other, ref.slice(0, 8))).toBeGreaterThan(1e-3);
  });

  it('refuses what it does not implement, naming the field', () => {
    const refuse = (patch: Record<string, unknown>) => () => archFromConfig({ ...QWEN35_OTHER, ...patch }, 'm/config.json');
    expect(refuse({ layer_types: ['linear_attention', 'full_attention', 'mamba', 'linear_attention', 'linear_attention'] })).toThrow(
      /m\/config\.json: "layer_types" entry "mamba" is not implemented/,
    );
    expect(refuse({ layer_types: Array(5).fill('linear_attention') })).toThrow(/"layer_types" has no full_attention layer/);
    expect(refuse({ linear_num_value_heads: 4, linear_num_key_heads: 3 })).toThrow(/"linear_num_value_heads" \(4\) is not a multiple/);
    expect(() => archFromConfig({ model_type: 'qwen3_5_moe', text_config: 3 }, 'm/config.json')).toThrow(/"text_config" must be an object/);
    expect(() =>
      archFromConfig({ model_type: 'qwen3_5_moe', text_config: { ...QWEN35_OTHER, layer_types: ['x'] } }, 'm/config.json'),
    ).toThrow(/"text_config.layer_types" has 1 entries for 5 layers/);
  });
});
