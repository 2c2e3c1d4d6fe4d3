/**
 * LLaVA configurations the fixtures do not cover, made in code: a list `vision_feature_layer`
 * (hidden states concatenated on the hidden axis, the projector's input widened to match),
 * `vision_feature_select_strategy: "full"` (the class row kept: 1 + side² tokens per image), and
 * hidden state 0 (after pre_layrnorm, no encoder layer). Each goes export --config → prepare →
 * compile on a tiny random checkpoint (Hub keys), and is judged by an independent float64
 * forward written here from Hugging Face's modeling files:
 *   - models/clip/modeling_clip.py (CLIPVisionEmbeddings: conv without bias, class embedding,
 *     positions; pre_layrnorm; CLIPEncoderLayer: LN → attention (scale head_dim^-0.5) → residual,
 *     LN → fc1 → quick_gelu → fc2 → residual; hidden_states[0] is the pre_layrnorm output);
 *   - models/llava/modeling_llava.py (get_image_features: hidden_states[l] for each layer of the
 *     list, torch.cat(dim=-1), `[:, 1:]` for "default"; LlavaMultiModalProjector linear-GELU-linear).
 * The language graph's merge is judged with image rows equal to embedding rows of chosen tokens:
 * its logits must then equal the text model's reference forward (graph-reference.ts) over the
 * prompt with those tokens in place of the image tokens.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { fromFloat32 } from '../../src/formats/dtype';
import { serializeSafetensors } from '../../src/formats/safetensors/writer';
import { randomCheckpoint, rng } from '../support/graph-random';
import { referenceForward } from '../support/graph-reference';
import type { F32 } from '../support/graph-support';
import { haveOnnxChecker } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';
import { exportPrepareCompile, expectGraphsAndArtifactsValid, maxDiff, vlmCli } from '../../../test/support/vlm-cli';

const tmp = tempDirs('ws-vlm-llava-cfg-');

const VISION = {
  model_type: 'clip_vision_model',
  hidden_size: 16,
  intermediate_size: 24,
  num_hidden_layers: 3,
  num_attention_heads: 2,
  image_size: 8,
  patch_size: 4,
};
const TEXT = {
  model_type: 'llama',
  hidden_size: 32,
  intermediate_size: 48,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  vocab_size: 64,
  rms_norm_eps: 1e-5,
  max_position_embeddings: 128,
};
const IMAGE = 60;

/** HF's erf-GELU in float64 (erf by its Maclaurin series, exact to ~1e-11 for |x| ≤ 5). */
function gelu(x: number): number {
  const z = x / Math.SQRT2;
  let erf: number;
  if (Math.abs(z) > 5) erf = Math.sign(z);
  else {
    let term = z;
    let sum = z;
    for (let n = 1; n < 120; n++) {
      term *= (-z * z) / n;
      sum += term / (2 * n + 1);
    }
    erf = (2 / Math.sqrt(Math.PI)) * sum;
  }
  return 0.5 * x * (1 + erf);
}
const quickGelu = (x: number) => x / (1 + Math.exp(-1.702 * x));

type Rows = number[][];
const lin = (x: Rows, w: F32, b?: F32): Rows =>
  x.map((r) =>
    Array.from({ length: w.shape[0]! }, (_, o) => r.reduce((s, v, i) => s + v * w.data[o * w.shape[1]! + i]!, b ? b.data[o]! : 0)),
  );
const layerNorm = (x: Rows, w: F32, b: F32, eps = 1e-5): Rows =>
  x.map((r) => {
    const m = r.reduce((s, v) => s + v, 0) / r.length;
    const va = r.reduce((s, v) => s + (v - m) ** 2, 0) / r.length;
    return r.map((v, i) => ((v - m) / Math.sqrt(va + eps)) * w.data[i]! + b.data[i]!);
  });

/** CLIP hidden states 0 … L over one image `[3, S, S]` (float64), rows = class + patches. */
function clipReference(w: Map<string, F32>, pix: Float32Array): Rows[] {
  const get = (k: string) => w.get(`vision_tower.vision_model.${k}`)!;
  const D = VISION.hidden_size;
  const P = VISION.patch_size;
  const S = VISION.image_size;
  const side = S / P;
  const conv = get('embeddings.patch_embedding.weight');
  const rows: Rows = [Array.from(get('embeddings.class_embedding').data)];
  for (let py = 0; py < side; py++)
    for (let px = 0; px < side; px++)
      rows.push(
        Array.from({ length: D }, (_, d) => {
          let s = 0;
          for (let c = 0; c < 3; c++)
            for (let ky = 0; ky < P; ky++)
              for (let kx = 0; kx < P; kx++)
                s += conv.data[((d * 3 + c) * P + ky) * P + kx]! * pix[(c * S + py * P + ky) * S + px * P + kx]!;
          return s;
        }),
      );
  const pos = get('embeddings.position_embedding.weight');
  let h = layerNorm(
    rows.map((r, t) => r.map((v, i) => v + pos.data[t * D + i]!)),
    get('pre_layrnorm.weight'),
    get('pre_layrnorm.bias'),
  );
  const states = [h];
  const nh = VISION.num_attention_heads;
  const hd = D / nh;
  for (let l = 0; l < VISION.num_hidden_layers; l++) {
    const p = (k: string) => get(`encoder.layers.${l}.${k}`);
    const x = layerNorm(h, p('layer_norm1.weight'), p('layer_norm1.bias'));
    const [q, k, v] = ['q_proj', 'k_proj', 'v_proj'].map((n) => lin(x, p(`self_attn.${n}.weight`), p(`self_attn.${n}.bias`)));
    const ctx = q!.map((qr) => {
      const out = new Array<number>(D).fill(0);
      for (let j = 0; j < nh; j++) {
        const sc = k!.map((kr) => qr.slice(j * hd, (j + 1) * hd).reduce((s, a, i) => s + a * kr[j * hd + i]!, 0) / Math.sqrt(hd));
        const m = Math.max(...sc);
        const e = sc.map((a) => Math.exp(a - m));
        const z = e.reduce((a, b) => a + b, 0);
        e.forEach((a, t) => {
          for (let i = 0; i < hd; i++) out[j * hd + i]! += (a / z) * v![t]![j * hd + i]!;
        });
      }
      return out;
    });
    const att = lin(ctx, p('self_attn.out_proj.weight'), p('self_attn.out_proj.bias'));
    h = h.map((r, t) => r.map((a, i) => a + att[t]![i]!));
    const y = layerNorm(h, p('layer_norm2.weight'), p('layer_norm2.bias'));
    const mlp = lin(
      lin(y, p('mlp.fc1.weight'), p('mlp.fc1.bias')).map((r) => r.map(quickGelu)),
      p('mlp.fc2.weight'),
      p('mlp.fc2.bias'),
    );
    h = h.map((r, t) => r.map((a, i) => a + mlp[t]![i]!));
    states.push(h);
  }
  return states;
}

/** get_image_features + the projector for one image. */
function llavaReference(w: Map<string, F32>, pix: Float32Array, layers: number[], strategy: string): Rows {
  const hs = clipReference(w, pix);
  const n = hs.length;
  let sel = hs[0]!.map((_, t) => layers.flatMap((l) => hs[l < 0 ? n + l : l]![t]!));
  if (strategy === 'default') sel = sel.slice(1);
  const g = (k: string) => w.get(`multi_modal_projector.${k}`)!;
  return lin(
    lin(sel, g('linear_1.weight'), g('linear_1.bias')).map((r) => r.map(gelu)),
    g('linear_2.weight'),
    g('linear_2.bias'),
  );
}

/** A random LLaVA checkpoint (Hub keys) for `layers` feature layers. */
function checkpoint(layers: number): Map<string, F32> {
  const r = rng(7);
  const w = new Map<string, F32>();
  const put = (k: string, shape: number[], scale: number, center = 0) =>
    w.set(k, { shape, data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => center + scale * r()) });
  const D = VISION.hidden_size;
  const V = 'vision_tower.vision_model';
  const T = 1 + (VISION.image_size / VISION.patch_size) ** 2;
  put(`${V}.embeddings.patch_embedding.weight`, [D, 3, VISION.patch_size, VISION.patch_size], 0.2);
  put(`${V}.embeddings.class_embedding`, [D], 0.5);
  put(`${V}.embeddings.position_embedding.weight`, [T, D], 0.5);
  put(`${V}.pre_layrnorm.weight`, [D], 0.1, 1);
  put(`${V}.pre_layrnorm.bias`, [D], 0.1);
  for (let l = 0; l < VISION.num_hidden_layers; l++) {
    const p = `${V}.encoder.layers.${l}`;
    for (const n of ['layer_norm1', 'layer_norm2']) {
      put(`${p}.${n}.weight`, [D], 0.1, 1);
      put(`${p}.${n}.bias`, [D], 0.1);
    }
    for (const n of ['q_proj', 'k_proj', 'v_proj', 'out_proj']) {
      put(`${p}.self_attn.${n}.weight`, [D, D], 0.3);
      put(`${p}.self_attn.${n}.bias`, [D], 0.1);
    }
    put(`${p}.mlp.fc1.weight`, [VISION.intermediate_size, D], 0.3);
    put(`${p}.mlp.fc1.bias`, [VISION.intermediate_size], 0.1);
    put(`${p}.mlp.fc2.weight`, [D, VISION.intermediate_size], 0.3);
    put(`${p}.mlp.fc2.bias`, [D], 0.1);
  }
  const H = TEXT.hidden_size;
  put('multi_modal_projector.linear_1.weight', [H, D * layers], 0.3);
  put('multi_modal_projector.linear_1.bias', [H], 0.1);
  put('multi_modal_projector.linear_2.weight', [H, H], 0.3);
  put('multi_modal_projector.linear_2.bias', [H], 0.1);
  for (const [k, t] of randomCheckpoint(TEXT, 3)) w.set(k.startsWith('model.') || k === 'lm_head.weight' ? `language_model.${k}` : k, t);
  return w;
}

const CASES: { name: string; layer: number | number[]; strategy: 'default' | 'full' }[] = [
  { name: 'a list of layers, full', layer: [-3, -1], strategy: 'full' },
  { name: 'a list of layers, default', layer: [1, -1, 0], strategy: 'default' },
  { name: 'hidden state 0 (no encoder layer), full', layer: 0, strategy: 'full' },
];

for (const cs of CASES) {
  describe(`llava, code-made: ${cs.name}`, () => {
    let work = '';
    const h = vlmCli(() => work);
    const layers = Array.isArray(cs.layer) ? cs.layer : [cs.layer];
    const w = checkpoint(layers.length);
    const tokens = 4 + (cs.strategy === 'full' ? 1 : 0);
    const pix = Float32Array.from({ length: 3 * 64 }, rng(11));

    beforeAll(async () => {
      work = tmp();
      mkdirSync(path.join(work, 'model'));
      const config = {
        architectures: ['LlavaForConditionalGeneration'],
        model_type: 'llava',
        image_token_index: IMAGE,
        vision_feature_layer: cs.layer,
        vision_feature_select_strategy: cs.strategy,
        projector_hidden_act: 'gelu',
        text_config: TEXT,
        vision_config: VISION,
      };
      writeFileSync(path.join(work, 'model', 'config.json'), JSON.stringify(config));
      const tensors = [...w].map(([key, t]) => ({ key, dtype: 'F32' as const, shape: t.shape, data: fromFloat32(t.data, 'F32') }));
      writeFileSync(path.join(work, 'model', 'model.safetensors'), serializeSafetensors(tensors));
      await exportPrepareCompile(h);
    }, 60_000);

    it(`the vision graph gives HF's image features (${tokens} rows) within 1e-4`, async () => {
      const out = await (await h.session('out/vision')).run({ pixel_values: new ort.Tensor('float32', pix, [1, 3, 8, 8]) });
      const want = llavaReference(w, pix, layers, cs.strategy);
      expect(want).toHaveLength(tokens);
      expect(out.vision_embeds!.dims).toEqual([1, tokens, TEXT.hidden_size]);
      expect(maxDiff(out.vision_embeds!.data as Float32Array, want.flat())).toBeLessThan(1e-4);
    });

    it('the language graph puts the image rows at the image tokens: logits equal the text model over the tokens those rows embed', async () => {
      const embed = w.get('language_model.model.embed_tokens.weight')!;
      const H = TEXT.hidden_size;
      const stand = Array.from({ length: tokens }, (_, k) => 10 + 3 * k);
      const rows = Float32Array.from(stand.flatMap((t) => Array.from(embed.data.subarray(t * H, (t + 1) * H))));
      const ids = [1, 5, ...stand.map(() => IMAGE), 9, 11];
      const textIds = [1, 5, ...stand, 9, 11];
      const textW = new Map(
        [...w].filter(([k]) => k.startsWith('language_model.')).map(([k, t]) => [k.slice('language_model.'.length), t]),
      );
      const want = referenceForward(TEXT, textW, textIds);
      const s = await h.session('out/language');
      const hd = H / TEXT.num_attention_heads;
      const got: number[][] = [];
      for (let t = 1; t <= ids.length; t++) {
        const feeds: Record<string, ort.Tensor> = {
          input_ids: new ort.Tensor('int64', BigInt64Array.from(ids.slice(0, t).map(BigInt)), [1, t]),
          vision_embeds: new ort.Tensor('float32', rows, [1, tokens, H]),
          position_ids: new ort.Tensor('int64', BigInt64Array.from(Array.from({ length: t }, (_, k) => BigInt(k))), [1, t]),
          image_idx: new ort.Tensor('int64', new BigInt64Array(1), [1, 1]),
        };
        for (let l = 0; l < TEXT.num_hidden_layers; l++)
          for (const kv of ['key', 'value'])
            feeds[`past_${kv}.${l}`] = new ort.Tensor('float32', new Float32Array(TEXT.num_key_value_heads * ids.length * hd), [
              1,
              TEXT.num_key_value_heads,
              ids.length,
              hd,
            ]);
        got.push(Array.from((await s.run(feeds)).logits!.data as Float32Array));
      }
      expect(maxDiff(got.flat(), want.flat())).toBeLessThan(1e-4);
    });

    it('run --pixel-values generates from a prompt whose image tokens are the image rows', async () => {
      writeFileSync(
        path.join(work, 'pv.json'),
        JSON.stringify({
          pixel_values: [
            [0, 1, 2].map((c) => Array.from({ length: 8 }, (_, y) => Array.from(pix.subarray(c * 64 + y * 8, c * 64 + y * 8 + 8)))),
          ],
        }),
      );
      const ids = [1, 5, ...new Array<number>(tokens).fill(IMAGE), 9];
      const r = await h.ok('run', 'out', '--pixel-values', 'pv.json', '--input-ids', ids.join(','), '--max-new-tokens', '3');
      expect(r.stdout.trim().split(',')).toHaveLength(3);
      const over = await h.cliRun(
        'run',
        'out',
        '--pixel-values',
        'pv.json',
        '--input-ids',
        [...ids, IMAGE].join(','),
        '--max-new-tokens',
        '1',
      );
      expect(over.code).not.toBe(0);
      expect(over.stderr).toMatch(new RegExp(`${tokens + 1} image tokens but the image\\(s\\) give ${tokens} vision rows`));
    });

    it.runIf(haveOnnxChecker())("both graphs and their compiled artifacts pass ONNX's checker", () => {
      expectGraphsAndArtifactsValid(work, ['out/vision', 'out/language']);
    });
  });
}
