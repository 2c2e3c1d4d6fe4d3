/**
 * Mistral 3 configurations the fixture does not cover, made in code: images the processor
 * resizes (one shrunk under `longest_edge`, one rounded up to the patch·merge multiple), both
 * non-square and of different sizes, several in one prompt; projector biases
 * (`multimodal_projector_bias`) and an earlier `vision_feature_layer`. Each goes export --config
 * → prepare → compile → `run --image a.png --image b.png` (and `--pixel-values` in HF's padded
 * batch form) on a tiny random checkpoint (Hub keys), judged by an independent float64 forward
 * written here from Hugging Face's modeling files:
 *   - models/pixtral/modeling_pixtral.py (commit 0233e509531ace915c8241b4c16c8032a583279c):
 *     patch conv without bias, ln_pre (RMSNorm eps 1e-5), ALL images' patches in one sequence
 *     with generate_block_attention_mask (one block per image), position_ids_in_meshgrid
 *     (row · max_patches_per_side + col), PixtralRotaryEmbedding (even frequencies × row, odd ×
 *     column, cat(x, x), rotate_half), PixtralAttentionLayer (RMSNorm → attention → residual,
 *     RMSNorm → down(act(gate) · up) → residual); hidden_states[0] is ln_pre's output;
 *   - models/mistral3/modeling_mistral3.py (commit 00dcc6dda6f6d8e69541a6b51f97986a80242367):
 *     Mistral3MultiModalProjector (RMSNorm with text rms_norm_eps, Mistral3PatchMerger's
 *     F.unfold order, merging_layer, linear_1 → act → linear_2), features at `[IMG]` only;
 *   - models/pixtral/image_processing_pixtral.py (commit 015b6b8cb0343ff88c19f6f1670c0b3658a83a1e):
 *     get_resize_output_image_size (checked on its own sizes below).
 * The text model is the shared float64 reference (graph-reference.ts) with the image rows put at
 * the `[IMG]` positions (as extra embedding rows the prompt names).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { fromFloat32 } from '../../src/formats/float-convert';
import { serializeSafetensors } from '../../src/formats/safetensors/writer';
import { decodeImage } from '../../src/run/vlm/image';
import { pixtralImageText, pixtralProcessor, pixtralResizeSize, processPixtralImage } from '../../src/run/vlm/image-pixtral';
import { randomCheckpoint, rng } from '../support/graph-random';
import { ACT, linear, referenceForward, rms } from '../support/graph-reference';
import { erf } from '../support/graph-reference-dense';
import type { F32 } from '../support/graph-support';
import { haveOnnxChecker } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';
import { exportPrepareCompile, expectGraphsAndArtifactsValid, maxDiff, vlmCli, writePng } from '../../../test/support/vlm-cli';

const tmp = tempDirs('ws-vlm-mistral3-cfg-');

const VISION = {
  model_type: 'pixtral',
  hidden_size: 16,
  intermediate_size: 24,
  num_hidden_layers: 2,
  num_attention_heads: 2,
  head_dim: 8,
  image_size: 32,
  patch_size: 4,
  hidden_act: 'silu',
  rope_theta: 10000.0,
};
const TEXT = {
  model_type: 'mistral',
  hidden_size: 32,
  intermediate_size: 48,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 8,
  vocab_size: 64,
  rms_norm_eps: 1e-5,
  rope_theta: 1000000.0,
  sliding_window: null,
  max_position_embeddings: 256,
  tie_word_embeddings: false,
};
const IMG = 10;
const BREAK = 12;
const END = 13;
const MERGE = 2;
const UNIT = VISION.patch_size * MERGE;

type Rows = number[][];
const gelu = (x: number) => 0.5 * x * (1 + erf(x / Math.SQRT2));
const lin = (x: Rows, w: F32, b?: F32): Rows => linear(x, w, b);
const rmsRows = (x: Rows, w: F32, eps: number): Rows => x.map((r) => rms(r, w, eps, false));

/** Pixtral + the Mistral 3 projector over several images `[3, h, w]` at once (HF's one sequence, block-diagonal mask). */
function mistral3Reference(w: Map<string, F32>, images: { pix: Float32Array; h: number; w: number }[], layer: number, bias: boolean): Rows {
  const get = (k: string) => w.get(k)!;
  const D = VISION.hidden_size;
  const P = VISION.patch_size;
  const side = VISION.image_size / P;
  const conv = get('vision_tower.patch_conv.weight');
  const rows: Rows = [];
  const ids: number[] = [];
  const block: number[] = [];
  const grids: [number, number][] = [];
  images.forEach((im, b) => {
    const gh = im.h / P;
    const gw = im.w / P;
    grids.push([gh, gw]);
    for (let py = 0; py < gh; py++)
      for (let px = 0; px < gw; px++) {
        rows.push(
          Array.from({ length: D }, (_, d) => {
            let s = 0;
            for (let c = 0; c < 3; c++)
              for (let ky = 0; ky < P; ky++)
                for (let kx = 0; kx < P; kx++)
                  s += conv.data[((d * 3 + c) * P + ky) * P + kx]! * im.pix[(c * im.h + py * P + ky) * im.w + px * P + kx]!;
            return s;
          }),
        );
        ids.push(py * side + px); // position_ids_in_meshgrid(max_width = image_size // patch_size)
        block.push(b);
      }
  });
  // PixtralRotaryEmbedding: table row id = [row·freqs[::2], col·freqs[1::2]] for id = row·side + col
  const hd = VISION.head_dim;
  const freqs = Array.from({ length: hd / 2 }, (_, i) => 1 / VISION.rope_theta ** ((2 * i) / hd));
  const angles = ids.map((id) => {
    const r = Math.floor(id / side);
    const c = id % side;
    const half = [...freqs.filter((_, i) => i % 2 === 0).map((f) => r * f), ...freqs.filter((_, i) => i % 2 === 1).map((f) => c * f)];
    return [...half, ...half];
  });
  const rope = (v: number[], t: number) =>
    v.map((x, i) => {
      const rot = i < hd / 2 ? -v[i + hd / 2]! : v[i - hd / 2]!;
      return x * Math.cos(angles[t]![i]!) + rot * Math.sin(angles[t]![i]!);
    });
  let h = rmsRows(rows, get('vision_tower.ln_pre.weight'), 1e-5);
  const nh = VISION.num_attention_heads;
  const act = ACT[VISION.hidden_act]!;
  for (let l = 0; l < layer; l++) {
    const p = (k: string) => get(`vision_tower.transformer.layers.${l}.${k}`);
    const x = rmsRows(h, p('attention_norm.weight'), 1e-5);
    const [q, k, v] = ['q_proj', 'k_proj', 'v_proj'].map((n) => lin(x, p(`attention.${n}.weight`)));
    const ctx = q!.map((qr, t) => {
      const out = new Array<number>(D).fill(0);
      for (let j = 0; j < nh; j++) {
        const qh = rope(qr.slice(j * hd, (j + 1) * hd), t);
        const sc = k!.map((kr, s) =>
          block[s] !== block[t]
            ? -Infinity
            : qh.reduce((acc, a, i) => acc + a * rope(kr.slice(j * hd, (j + 1) * hd), s)[i]!, 0) / Math.sqrt(hd),
        );
        const m = Math.max(...sc);
        const e = sc.map((a) => Math.exp(a - m));
        const z = e.reduce((a, b) => a + b, 0);
        e.forEach((a, s) => {
          for (let i = 0; i < hd; i++) out[j * hd + i]! += (a / z) * v![s]![j * hd + i]!;
        });
      }
      return out;
    });
    const att = lin(ctx, p('attention.o_proj.weight'));
    h = h.map((r, t) => r.map((a, i) => a + att[t]![i]!));
    const y = rmsRows(h, p('ffn_norm.weight'), 1e-5);
    const gate = lin(y, p('feed_forward.gate_proj.weight'));
    const up = lin(y, p('feed_forward.up_proj.weight'));
    const mlp = lin(
      gate.map((r, t) => r.map((g, i) => act(g) * up[t]![i]!)),
      p('feed_forward.down_proj.weight'),
    );
    h = h.map((r, t) => r.map((a, i) => a + mlp[t]![i]!));
  }
  // projector: norm, then per image F.unfold(kernel = stride = m): feature d·m² + ki·m + kj of cell (i, j)
  const normed = rmsRows(h, get('multi_modal_projector.norm.weight'), TEXT.rms_norm_eps);
  const merged: Rows = [];
  let at = 0;
  for (const [gh, gw] of grids) {
    for (let i = 0; i < gh / MERGE; i++)
      for (let j = 0; j < gw / MERGE; j++) {
        const cell: number[] = [];
        for (let d = 0; d < D; d++)
          for (let ki = 0; ki < MERGE; ki++)
            for (let kj = 0; kj < MERGE; kj++) cell.push(normed[at + (i * MERGE + ki) * gw + j * MERGE + kj]![d]!);
        merged.push(cell);
      }
    at += gh * gw;
  }
  const g = (k: string) => w.get(`multi_modal_projector.${k}`);
  const x = lin(merged, g('patch_merger.merging_layer.weight')!);
  return lin(
    lin(x, g('linear_1.weight')!, bias ? g('linear_1.bias') : undefined).map((r) => r.map(gelu)),
    g('linear_2.weight')!,
    bias ? g('linear_2.bias') : undefined,
  );
}

/** A random Mistral 3 checkpoint (Hub keys). */
function checkpoint(bias: boolean): Map<string, F32> {
  const r = rng(5);
  const w = new Map<string, F32>();
  const put = (k: string, shape: number[], scale: number, center = 0) =>
    w.set(k, { shape, data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => center + scale * r()) });
  const D = VISION.hidden_size;
  const I = VISION.intermediate_size;
  put('vision_tower.patch_conv.weight', [D, 3, VISION.patch_size, VISION.patch_size], 0.2);
  put('vision_tower.ln_pre.weight', [D], 0.1, 1);
  for (let l = 0; l < VISION.num_hidden_layers; l++) {
    const p = `vision_tower.transformer.layers.${l}`;
    put(`${p}.attention_norm.weight`, [D], 0.1, 1);
    put(`${p}.ffn_norm.weight`, [D], 0.1, 1);
    for (const n of ['q_proj', 'k_proj', 'v_proj', 'o_proj']) put(`${p}.attention.${n}.weight`, [D, D], 0.4);
    put(`${p}.feed_forward.gate_proj.weight`, [I, D], 0.3);
    put(`${p}.feed_forward.up_proj.weight`, [I, D], 0.3);
    put(`${p}.feed_forward.down_proj.weight`, [D, I], 0.3);
  }
  const H = TEXT.hidden_size;
  put('multi_modal_projector.norm.weight', [D], 0.1, 1);
  put('multi_modal_projector.patch_merger.merging_layer.weight', [D, D * MERGE * MERGE], 0.2);
  put('multi_modal_projector.linear_1.weight', [H, D], 0.3);
  put('multi_modal_projector.linear_2.weight', [H, H], 0.3);
  if (bias) {
    put('multi_modal_projector.linear_1.bias', [H], 0.1);
    put('multi_modal_projector.linear_2.bias', [H], 0.1);
  }
  for (const [k, t] of randomCheckpoint(TEXT, 3)) w.set(`language_model.${k}`, t);
  return w;
}

/** A raw RGB image `[h][w][3]` of random bytes. */
const rawImage = (h: number, wd: number, seed: number): number[][][] => {
  const r = rng(seed);
  return Array.from({ length: h }, () => Array.from({ length: wd }, () => [0, 1, 2].map(() => Math.floor((r() + 1) * 127.5))));
};

describe('Pixtral processor sizes (HF get_resize_output_image_size with patch_size · spatial_merge_size)', () => {
  it('shrinks by the larger side ratio with floor, then rounds each side up to the multiple', () => {
    const p = { longestEdge: 32, unit: 8 };
    expect(pixtralResizeSize(40, 20, p)).toEqual([32, 16]); // ratio 1.25 → 32 × 16
    expect(pixtralResizeSize(13, 30, p)).toEqual([16, 32]); // no shrink; 13 → 16, 30 → 32
    expect(pixtralResizeSize(50, 33, p)).toEqual([32, 24]); // ratio 1.5625 → 32 × floor(21.12) = 21 → 24
    expect(pixtralResizeSize(24, 16, p)).toEqual([24, 16]); // the fixture's: unchanged
  });
  it('the token text: [IMG] per merged column, [IMG_BREAK] per row, [IMG_END] last', () => {
    expect(pixtralImageText([16, 24], 8)).toBe('[IMG][IMG][IMG][IMG_BREAK][IMG][IMG][IMG][IMG_END]');
  });
});

const CASES = [
  { name: 'projector biases, last hidden state', layer: -1, bias: true },
  { name: 'no biases, hidden state 1 (one block)', layer: 1, bias: false },
];

for (const cs of CASES) {
  describe(`mistral3, code-made: ${cs.name}; two resized non-square images in one prompt`, () => {
    let work = '';
    const h = vlmCli(() => work);
    const w = checkpoint(cs.bias);
    const raws = [rawImage(40, 20, 21), rawImage(13, 30, 22)];
    const layerIdx = cs.layer < 0 ? VISION.num_hidden_layers + 1 + cs.layer : cs.layer;
    let images: { pix: Float32Array; h: number; w: number }[] = [];
    let ids: number[] = [];

    beforeAll(async () => {
      work = tmp();
      mkdirSync(path.join(work, 'model'));
      const config = {
        architectures: ['Mistral3ForConditionalGeneration'],
        model_type: 'mistral3',
        image_token_index: IMG,
        vision_feature_layer: cs.layer,
        multimodal_projector_bias: cs.bias,
        projector_hidden_act: 'gelu',
        spatial_merge_size: MERGE,
        text_config: TEXT,
        vision_config: VISION,
      };
      writeFileSync(path.join(work, 'model', 'config.json'), JSON.stringify(config));
      writeFileSync(
        path.join(work, 'model', 'preprocessor_config.json'),
        JSON.stringify({
          image_processor_type: 'PixtralImageProcessor',
          size: { longest_edge: 32 },
          patch_size: { height: 4, width: 4 },
          resample: 3,
        }),
      );
      const tensors = [...w].map(([key, t]) => ({ key, dtype: 'F32' as const, shape: t.shape, data: fromFloat32(t.data, 'F32') }));
      writeFileSync(path.join(work, 'model', 'model.safetensors'), serializeSafetensors(tensors));
      raws.forEach((im, k) => writePng(path.join(work, `${k}.png`), im));
      const p = pixtralProcessor(path.join(work, 'model'), VISION.patch_size, MERGE);
      images = raws.map((_, k) => {
        const x = processPixtralImage(decodeImage(path.join(work, `${k}.png`)), p);
        return { pix: x.pixelValues, h: x.size[0], w: x.size[1] };
      });
      // [INST]-like text, image 1's rows, text, image 2's rows, text (PixtralProcessor's blocks)
      const block = (im: { h: number; w: number }) =>
        Array.from({ length: im.h / UNIT }, (_, r) => [
          ...new Array<number>(im.w / UNIT).fill(IMG),
          r === im.h / UNIT - 1 ? END : BREAK,
        ]).flat();
      ids = [1, 3, 40, ...block(images[0]!), 41, 42, ...block(images[1]!), 43, 4];
      await exportPrepareCompile(h);
    }, 120_000);

    /** The float64 reference logits for `seq` (image rows at its [IMG] tokens, in order). */
    const reference = (seq: number[]): number[][] => {
      const feats = mistral3Reference(w, images, layerIdx, cs.bias);
      const V = TEXT.vocab_size;
      const H = TEXT.hidden_size;
      const textW = new Map(
        [...w].filter(([k]) => k.startsWith('language_model.')).map(([k, t]) => [k.slice('language_model.'.length), t]),
      );
      const emb = textW.get('model.embed_tokens.weight')!;
      const data = new Float32Array((V + feats.length) * H);
      data.set(emb.data);
      feats.forEach((r, k) => data.set(r, (V + k) * H));
      textW.set('model.embed_tokens.weight', { shape: [V + feats.length, H], data });
      let n = 0;
      const mapped = seq.map((t) => (t === IMG ? V + n++ : t));
      expect(n).toBe(feats.length);
      return referenceForward(TEXT, textW, mapped).map((r) => r.slice(0, V));
    };

    it('the processor resized both images (32×16 and 16×32) and the prompt holds their rows', () => {
      expect(images.map((x) => [x.h, x.w])).toEqual([
        [32, 16],
        [16, 32],
      ]);
      expect(ids.filter((t) => t === IMG)).toHaveLength(8 + 8);
    });

    it('run --image a --image b: --dump-logits within 1e-4 of the float64 reference on every row; greedy tokens are its argmax', async () => {
      const imgs = ['--image', '0.png', '--image', '1.png'];
      const gen = await h.ok('run', 'out', ...imgs, '--input-ids', ids.join(','), '--max-new-tokens', '3');
      const tokens = gen.stdout.trim().split(',').map(Number);
      expect(tokens).toHaveLength(3);
      const all = [...ids, ...tokens.slice(0, -1)];
      await h.ok('run', 'out', ...imgs, '--input-ids', all.join(','), '--dump-logits', 'logits.json');
      const { readFileSync } = await import('node:fs');
      const got = JSON.parse(readFileSync(path.join(work, 'logits.json'), 'utf8')).logits as number[][];
      const want = reference(all);
      expect(got).toHaveLength(want.length);
      expect(maxDiff(got.flat(), want.flat())).toBeLessThan(1e-4);
      const argmax = (r: number[]) => r.indexOf(Math.max(...r));
      expect(want.slice(ids.length - 1).map(argmax)).toEqual(tokens);
    }, 60_000);

    it('run --pixel-values in HF’s padded batch form (image_sizes) gives the same logits', async () => {
      const Hm = Math.max(...images.map((x) => x.h));
      const Wm = Math.max(...images.map((x) => x.w));
      const padded = images.map((im) =>
        [0, 1, 2].map((c) =>
          Array.from({ length: Hm }, (_, y) =>
            Array.from({ length: Wm }, (_, x) => (y < im.h && x < im.w ? im.pix[(c * im.h + y) * im.w + x]! : 0)),
          ),
        ),
      );
      writeFileSync(path.join(work, 'pv.json'), JSON.stringify({ pixel_values: padded, image_sizes: images.map((x) => [x.h, x.w]) }));
      await h.ok('run', 'out', '--pixel-values', 'pv.json', '--input-ids', ids.join(','), '--dump-logits', 'pv-logits.json');
      const { readFileSync } = await import('node:fs');
      const got = JSON.parse(readFileSync(path.join(work, 'pv-logits.json'), 'utf8')).logits as number[][];
      expect(maxDiff(got.flat(), reference(ids).flat())).toBeLessThan(1e-4);
      // a prompt with more [IMG] than the images give is refused with one line
      const over = await h.cliRun(
        'run',
        'out',
        '--pixel-values',
        'pv.json',
        '--input-ids',
        [...ids, IMG].join(','),
        '--max-new-tokens',
        '1',
      );
      expect(over.code).not.toBe(0);
      expect(over.stderr).toMatch(/17 image tokens but the image\(s\) give 16 vision rows/);
    }, 60_000);

    it.runIf(haveOnnxChecker())("both graphs and their compiled artifacts pass ONNX's checker", () => {
      expectGraphsAndArtifactsValid(work, ['out/vision', 'out/language']);
    });
  });
}
