/**
 * LLaVA configurations the fixtures do not cover, made in code: a list `vision_feature_layer`
 * (hidden states concatenated on the hidden axis, the projector's input widened to match),
 * `vision_feature_select_strategy: "full"` (the class row kept: 1 + side² tokens per image),
 * hidden state 0 (after pre_layrnorm, no encoder layer), and other text models under the wrapper
 * (Gemma: HF scales inputs_embeds, image rows included, by √hidden; Qwen2: q/k/v biases). Each goes export --config → prepare →
 * compile on a tiny random checkpoint (Hub keys), and is judged by the independent float64
 * CLIP + projector forward of core/test/support/llava-reference.ts (sources cited there).
 * The language graph's merge is judged with image rows equal to embedding rows of chosen tokens:
 * its logits must then equal the text model's reference forward (graph-reference.ts) over the
 * prompt with those tokens in place of the image tokens.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { fromFloat32 } from '../../src/formats/float-convert';
import { serializeSafetensors } from '../../src/formats/safetensors/writer';
import { rng } from '../support/graph-random';
import { dims, llavaCheckpoint, llavaReference, TEXT, VISION, type TextConfig } from '../support/llava-reference';
import { familyTestConfigs } from '../../src/export/families/registry';
import { referenceForward } from '../support/graph-reference';
import { haveOnnxChecker } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';
import { exportPrepareCompile, expectGraphsAndArtifactsValid, maxDiff, vlmCli } from '../../../test/support/vlm-cli';

const tmp = tempDirs('ws-vlm-llava-cfg-');

const CASES: { name: string; layer: number | number[]; strategy: 'default' | 'full'; text: TextConfig }[] = [
  { name: 'a list of layers, full', layer: [-3, -1], strategy: 'full', text: TEXT },
  { name: 'a list of layers, default', layer: [1, -1, 0], strategy: 'default', text: TEXT },
  { name: 'hidden state 0 (no encoder layer), full', layer: 0, strategy: 'full', text: TEXT },
  // the registry's own test configs: Gemma scales inputs_embeds (image rows too) by √hidden; Qwen2's q/k/v biases
  { name: 'a gemma text model', layer: -2, strategy: 'default', text: familyTestConfigs().gemma! },
  { name: 'a qwen2 text model', layer: -1, strategy: 'default', text: { ...TEXT, model_type: 'qwen2', rms_norm_eps: 1e-6 } },
];

for (const cs of CASES) {
  describe(`llava, code-made: ${cs.name}`, () => {
    let work = '';
    const h = vlmCli(() => work);
    const layers = Array.isArray(cs.layer) ? cs.layer : [cs.layer];
    const w = llavaCheckpoint(layers.length, cs.text);
    const T = dims(cs.text);
    const IMAGE = T.vocab_size - 1;
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
        text_config: cs.text,
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
      expect(out.vision_embeds!.dims).toEqual([1, tokens, T.hidden_size]);
      expect(maxDiff(out.vision_embeds!.data as Float32Array, want.flat())).toBeLessThan(1e-4);
    });

    it('the language graph puts the image rows at the image tokens: logits equal the text model over the tokens those rows embed', async () => {
      const embed = w.get('language_model.model.embed_tokens.weight')!;
      const H = T.hidden_size;
      const stand = Array.from({ length: tokens }, (_, k) => 10 + 3 * k);
      const rows = Float32Array.from(stand.flatMap((t) => Array.from(embed.data.subarray(t * H, (t + 1) * H))));
      const ids = [1, 5, ...stand.map(() => IMAGE), 9, 11];
      const textIds = [1, 5, ...stand, 9, 11];
      const textW = new Map(
        [...w].filter(([k]) => k.startsWith('language_model.')).map(([k, t]) => [k.slice('language_model.'.length), t]),
      );
      const want = referenceForward(cs.text, textW, textIds);
      const s = await h.session('out/language');
      const tc = cs.text as { head_dim?: number; num_attention_heads: number; num_key_value_heads?: number; num_hidden_layers: number };
      const hd = tc.head_dim ?? H / tc.num_attention_heads;
      const nkv = tc.num_key_value_heads ?? tc.num_attention_heads;
      const got: number[][] = [];
      for (let t = 1; t <= ids.length; t++) {
        const feeds: Record<string, ort.Tensor> = {
          input_ids: new ort.Tensor('int64', BigInt64Array.from(ids.slice(0, t).map(BigInt)), [1, t]),
          vision_embeds: new ort.Tensor('float32', rows, [1, tokens, H]),
          position_ids: new ort.Tensor('int64', BigInt64Array.from(Array.from({ length: t }, (_, k) => BigInt(k))), [1, t]),
          image_idx: new ort.Tensor('int64', new BigInt64Array(1), [1, 1]),
        };
        for (let l = 0; l < tc.num_hidden_layers; l++)
          for (const kv of ['key', 'value'])
            feeds[`past_${kv}.${l}`] = new ort.Tensor('float32', new Float32Array(nkv * ids.length * hd), [1, nkv, ids.length, hd]);
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
