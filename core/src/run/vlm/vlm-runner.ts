/**
 * Runs a VLM export (`<out>/vlm.json` + compiled `vision/` and `language/`) with ONNX Runtime,
 * as QEfficient's dual-graph generation does: the vision graph once per image size (images of
 * one size share a call: image_grid_thw `[n, t, h, w]`), the MRoPE position ids from
 * {@link getRopeIndex} (rows 1–3; row 0 is the cache position), one prefill of the prompt with
 * the vision outputs, then greedy decode at cache position p with MRoPE position p + delta.
 * QEfficient's serving features, as the text runner feeds them (serving.ts): a `comp_ctx_lengths`
 * input gets the smallest covering CCL bucket of the call's phase; a language graph ending in the
 * on-device sampler is fed greedy parameters and its `next_tokens` is the token (no logits).
 */
import { ctxState, RETAINED, stateDims, statesOfGraph } from '../../artifacts/graph-interface';
import fs from 'node:fs';
import path from 'node:path';
import { PipelineError, UsageError } from '../../errors';
import { readRegularFileSync } from '../../paths';
import { parseWireModel, type WireValueInfo } from '../../formats/onnx/wire-model';
import { VLM_MANIFEST } from '../../export/vlm/export-vlm';
import { readVlmManifest, type VlmManifest } from '../../artifacts/vlm-manifest';

export { readVlmManifest } from '../../artifacts/vlm-manifest';
import { resolveRunnable } from '../index';
import { loadOrt, type OrtModule, type OrtSession, type OrtTensor } from '../../ort/loader';
import { argmax, logitRows } from '../runner';
import type { OnToken } from '../runner-generate';
import { cclTensor, pickBucket, SAMPLER_STATE, samplerFeeds, samplerState, servingFeatures } from '../serving';
import { GREEDY } from '../sampling';
import { ortSessionOptions } from '../../ort/session-options';
import { getRopeIndex } from './rope-index';
import { int64, ortRun, visionCalls, type VlmImages } from './vlm-vision';
import { TensorDataType } from '../../formats/onnx/types';

export type { VlmImages } from './vlm-vision';

/** True when `dir` is a VLM export directory. */
export function isVlmExport(dir: string): boolean {
  return fs.existsSync(path.join(dir, VLM_MANIFEST));
}

/** A loaded VLM. */
export interface VlmRunner {
  readonly manifest: VlmManifest;
  /** The KV cache length: fixed by the graph, else `--ctx-len`; undefined when neither (sized per call). */
  readonly ctxLen: number | undefined;
  /** Logits predicting token t+1 for every t of `ids` (one row per id). */
  logits(ids: number[], images: VlmImages | undefined): Promise<number[][]>;
  /**
   * Greedy decode of `n` tokens; `ttftMs` is the time to the first one. `onToken` sees each
   * token as it is chosen; returning true stops there (an end-of-sequence token).
   */
  generate(
    ids: number[],
    images: VlmImages | undefined,
    n: number,
    onToken?: OnToken,
  ): Promise<{ tokens: number[]; ttftMs: number; totalMs: number }>;
  close(): Promise<void>;
}

const fixed = (d: number | string | undefined): number | undefined => (typeof d === 'number' && d > 0 ? d : undefined);

async function open(ort: OrtModule, model: string, prepack?: boolean): Promise<OrtSession> {
  try {
    return await ort.InferenceSession.create(model, ortSessionOptions(prepack));
  } catch (e) {
    throw new PipelineError(`${model}: ONNX Runtime cannot load it: ${(e as Error).message.split('\n')[0]}`);
  }
}

/** Opens both compiled graphs of the VLM export in `dir`. */
export async function openVlmRunner(dir: string, opts: { ortPath?: string; prepack?: boolean; ctxLen?: number } = {}): Promise<VlmRunner> {
  const m = readVlmManifest(dir);
  const runnable = (g: string) => {
    const r = resolveRunnable(path.join(dir, g));
    // as for text models: a stale artifact is never run silently
    if (r.status?.state === 'stale') {
      const what = r.status.changed?.length ? `${r.status.changed.join(', ')} changed` : 'its inputs changed';
      throw new PipelineError(
        `${path.join(dir, g)}: the compiled model is stale (${what} since the compile); run \`weight-spec compile ${dir}\` first`,
      );
    }
    return r.model;
  };
  const visionModel = runnable(m.graphs.vision);
  const langModel = runnable(m.graphs.language);
  const vin = parseWireModel(readRegularFileSync(visionModel), visionModel).inputs;
  const langWire = parseWireModel(readRegularFileSync(langModel), langModel);
  const lin = langWire.inputs;
  const ort = loadOrt(opts.ortPath);
  const vision = await open(ort, visionModel, opts.prepack);
  const lang = await open(ort, langModel, opts.prepack);
  const byName = new Map(lin.map((i) => [i.name, i]));
  const need = (name: string, from: Map<string, WireValueInfo>, file: string) => {
    const v = from.get(name);
    if (!v) throw new PipelineError(`${file}: the graph has no ${name} input; not a weight-spec VLM graph`);
    return v;
  };
  const pixelInfo = need('pixel_values', new Map(vin.map((i) => [i.name, i])), visionModel);
  const embedsInfo = need('vision_embeds', byName, langModel);
  const F = m.vision.num_feature_layers;
  // Gemma 3 / LLaVA: pixel_values [n, C, S, S] without a grid, vision_embeds [n, mm, H], plain position_ids [B, S];
  // LLaVA-NeXT: per image pixel_values [1, patches, C, S, S] + pack_index (anyres.ts) → vision_embeds [1, tokens, H]
  const anyres = m.model_type === 'llava_next';
  // Mistral 3: per image pixel_values [1, C, h, w] (its own size) → vision_embeds [1, (h/pm)·(w/pm), H]
  const pixtral = m.model_type === 'mistral3';
  // InternVL, Llama 4: the processor's tiles [tiles, C, S, S] as whole images → vision_embeds [tiles, tile_tokens, H], rows in tile order
  const whole =
    m.model_type === 'gemma3' || m.model_type === 'llava' || m.model_type === 'internvl' || m.model_type === 'llama4' || anyres || pixtral;
  // Qwen2.5-VL has no deepstack (num_feature_layers 0): neither graph has those tensors
  if (F > 0) need('deepstack_features', byName, langModel);
  need('image_idx', byName, langModel);
  // the language graph's states (graph-interface.ts); ctx_len from the first with a ctx_len axis
  const cache = statesOfGraph(lin, langWire.metadata);
  const c0 = ctxState(cache);
  if (!c0 || cache.some((st) => !stateDims(st, 1, 1)))
    throw new PipelineError(`${langModel}: no state inputs (past_key/past_value) with every dim fixed but batch and ctx_len`);
  if ((fixed(need('input_ids', byName, langModel).dims[0]) ?? 1) !== 1)
    throw new PipelineError(`${langModel}: only batch size 1 runs here`);
  const feat = servingFeatures(langModel, lin, langWire.outputs, langWire.metadata);
  const half = embedsInfo.elemType === TensorDataType.FLOAT16;
  const H = m.text.hidden_size;
  const i64 = (v: number[], dims: number[]) => int64(ort, v, dims);
  const run = ortRun;
  const runVision = visionCalls({ ort, m, vision, visionModel, pixelInfo, F, H, half, whole, anyres, pixtral });

  const newState = (tokens: number) => {
    const ctx = fixed(c0.dims[c0.ctxAxis!]) ?? opts.ctxLen ?? tokens;
    if (tokens > ctx) throw new PipelineError(`${langModel}: ${tokens} tokens do not fit the KV cache (ctx_len ${ctx})`);
    const st: Record<string, OrtTensor> = Object.create(null) as Record<string, OrtTensor>;
    for (const c of cache) {
      const dims = stateDims(c, fixed(c.dims[0]) ?? 1, ctx)!;
      const n = dims.reduce((a, b) => a * b, 1);
      st[c.name] =
        byName.get(c.name)!.elemType === TensorDataType.FLOAT16
          ? new ort.Tensor('float16', new Uint16Array(n), dims)
          : new ort.Tensor('float32', new Float32Array(n), dims);
    }
    st.image_idx = i64([0], [1, 1]);
    if (feat.sampler) Object.assign(st, samplerState(ort, fixed(c0.dims[0]) ?? 1, feat.sampler.vocab));
    return st;
  };
  const copy = (st: Record<string, OrtTensor>) => ({ ...st });
  /**
   * One language call: `ids` at cache positions `cachePos`, MRoPE rows `mrope` (3 × len); the last
   * position's logits row (none from a sampler graph) and its greedy token.
   */
  const step = async (
    st: Record<string, OrtTensor>,
    v: { embeds: OrtTensor; deep: OrtTensor },
    ids: number[],
    cachePos: number[],
    mrope: number[][],
    phase: 'prefill' | 'decode' = ids.length > 1 ? 'prefill' : 'decode',
  ): Promise<{ row?: Float32Array; token: number }> => {
    const feeds: Record<string, OrtTensor> = {
      ...st,
      input_ids: i64(ids, [1, ids.length]),
      position_ids: whole ? i64(cachePos, [1, ids.length]) : i64([cachePos, ...mrope].flat(), [4, 1, ids.length]),
      vision_embeds: v.embeds,
      ...(F > 0 ? { deepstack_features: v.deep } : {}),
    };
    if (byName.has('batch_index')) feeds.batch_index = i64([0], [1, 1]);
    if (feat.ccl) {
      const ctx = st[c0.name]!.dims[c0.ctxAxis!]!;
      feeds.comp_ctx_lengths = cclTensor(ort, pickBucket(feat.ccl[phase], cachePos[cachePos.length - 1]!, ctx));
    }
    if (feat.sampler) {
      const k = feat.sampler.maxTopK;
      Object.assign(feeds, samplerFeeds(ort, GREEDY, 1, k, feeds.input_ids!, new Float32Array(k).fill(0.5)));
    }
    const out = await run(lang, langModel, feeds);
    for (const c of cache) st[c.name] = out[c.retained]!;
    st.image_idx = out.image_idx_output!;
    if (feat.sampler) {
      for (const name of SAMPLER_STATE) {
        const r = out[name + RETAINED];
        if (!r) throw new PipelineError(`${langModel}: output ${name + RETAINED} is missing`);
        st[name] = r;
      }
      return { token: Number((out.next_tokens!.data as BigInt64Array)[0]) };
    }
    const rows = logitRows(out.logits!);
    const row = rows[rows.length - 1]!;
    return { row, token: argmax(row) };
  };
  const prepare = async (ids: number[], img: VlmImages | undefined) => {
    if (ids.length === 0) throw new UsageError('run: no input ids given');
    const v = await runVision(img);
    const imageTokens = ids.filter((x) => x === m.image_token_id).length;
    if (imageTokens > v.rows)
      throw new UsageError(`run: --input-ids hold ${imageTokens} image tokens but the image(s) give ${v.rows} vision rows`);
    const rope = whole
      ? { positions: [0, 1, 2].map(() => ids.map((_, k) => k)) as [number[], number[], number[]], delta: 0 }
      : getRopeIndex(ids, img?.grids ?? [], {
          imageTokenId: m.image_token_id,
          videoTokenId: m.video_token_id,
          visionStartTokenId: m.vision_start_token_id,
          spatialMergeSize: m.vision.spatial_merge_size,
        });
    return { v, rope, range: (a: number, b: number) => rope.positions.map((r) => r.slice(a, b)) };
  };
  const arange = (a: number, b: number) => Array.from({ length: b - a }, (_, k) => a + k);

  return {
    manifest: m,
    ctxLen: fixed(c0.dims[2]) ?? opts.ctxLen,
    async logits(ids, img) {
      if (feat.sampler)
        throw new PipelineError(
          `${langModel}: the language graph ends in the on-device sampler (next_tokens); it has no logits to dump (export without --sampler)`,
        );
      const { v, range } = await prepare(ids, img);
      // Gemma 3: a row of a token inside an image (before its last token) comes from the prefix
      // that ends there, while HF's one forward lets it see the whole image (bidirectional); the
      // interface's last-position logits cannot give HF's value for those rows.
      // image rows merge only in calls with seq > 1 (QEfficient), so every prefix up to the
      // last image token is a fresh prefill; later tokens go one per call through the cache
      const last = ids.lastIndexOf(m.image_token_id);
      const rows: number[][] = [];
      let state: Record<string, OrtTensor> | undefined;
      for (let t = 0; t <= last; t++) {
        const st = newState(ids.length);
        rows.push(Array.from((await step(st, v, ids.slice(0, t + 1), arange(0, t + 1), range(0, t + 1), 'prefill')).row!));
        if (t === last) state = copy(st);
      }
      state ??= newState(ids.length);
      for (let t = last + 1; t < ids.length; t++) rows.push(Array.from((await step(state, v, [ids[t]!], [t], range(t, t + 1))).row!));
      return rows;
    },
    async generate(ids, img, n, onToken) {
      const t0 = performance.now();
      const { v, rope, range } = await prepare(ids, img);
      const st = newState(ids.length + n);
      let next = (await step(st, v, ids, arange(0, ids.length), range(0, ids.length), 'prefill')).token;
      const ttftMs = performance.now() - t0;
      const tokens: number[] = [];
      for (let k = 0; k < n; k++) {
        tokens.push(next);
        if (onToken?.(next)) break;
        if (k + 1 < n) {
          const p = ids.length + k;
          next = (await step(st, v, [next], [p], [[p + rope.delta], [p + rope.delta], [p + rope.delta]])).token;
        }
      }
      return { tokens, ttftMs, totalMs: performance.now() - t0 };
    },
    async close() {
      await vision.release?.();
      await lang.release?.();
    },
  };
}
