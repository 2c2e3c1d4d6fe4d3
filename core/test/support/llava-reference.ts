/**
 * An independent float64 LLaVA vision side for the code-made LLaVA tests (core/test/vlm/
 * vlm-llava-configs, vlm-llava-next-configs), written from Hugging Face's modeling files and
 * sharing no code with the graph builder:
 *   - models/clip/modeling_clip.py (commit 679021a6b0ded09d623a96e2bd2f822c5a548872): CLIPVisionEmbeddings
 *     (conv without bias, class embedding, positions), pre_layrnorm, CLIPEncoderLayer (LN → attention,
 *     scale head_dim^-0.5 → residual, LN → fc1 → quick_gelu → fc2 → residual); hidden_states[0] is
 *     the pre_layrnorm output;
 *   - models/llava/modeling_llava.py (commit e33ea883d6dd6b2bb891d0428bfb963c791a3fa7)
 *     get_image_features: hidden_states[l] per listed layer, `[:, 1:]` under "default", torch.cat on
 *     the hidden axis; LlavaMultiModalProjector linear_1 → GELU (erf) → linear_2.
 * Plus a random checkpoint under the Hub's keys for a tiny CLIP (or SigLIP) tower and a registry text model.
 */
import { randomCheckpoint, rng } from './graph-random';
import type { F32 } from './graph-support';

/** The tiny CLIP tower of the code-made tests (image 8, patch 4: 2 × 2 patches). */
export const VISION = {
  model_type: 'clip_vision_model',
  hidden_size: 16,
  intermediate_size: 24,
  num_hidden_layers: 3,
  num_attention_heads: 2,
  image_size: 8,
  patch_size: 4,
};
/** A small llama text model. */
export const TEXT = {
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
const geluTanh = (x: number) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));

/** Rows of float64 values. */
export type Rows = number[][];
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

/**
 * CLIP hidden states 0 … L over one image `[3, S, S]` (float64), rows = class + patches; a
 * checkpoint without `class_embedding` is SigLIP's (models/siglip/modeling_siglip.py: conv bias,
 * no class row, no pre_layrnorm, gelu_pytorch_tanh, eps 1e-6).
 */
export function clipReference(w: Map<string, F32>, pix: Float32Array): Rows[] {
  const get = (k: string) => w.get(`vision_tower.vision_model.${k}`)!;
  const siglip = !w.has('vision_tower.vision_model.embeddings.class_embedding');
  const eps = siglip ? 1e-6 : 1e-5;
  const act = siglip ? geluTanh : quickGelu;
  const D = VISION.hidden_size;
  const P = VISION.patch_size;
  const S = VISION.image_size;
  const side = S / P;
  const conv = get('embeddings.patch_embedding.weight');
  const rows: Rows = siglip ? [] : [Array.from(get('embeddings.class_embedding').data)];
  const bias = siglip ? get('embeddings.patch_embedding.bias') : undefined;
  for (let py = 0; py < side; py++)
    for (let px = 0; px < side; px++)
      rows.push(
        Array.from({ length: D }, (_, d) => {
          let s = bias ? bias.data[d]! : 0;
          for (let c = 0; c < 3; c++)
            for (let ky = 0; ky < P; ky++)
              for (let kx = 0; kx < P; kx++)
                s += conv.data[((d * 3 + c) * P + ky) * P + kx]! * pix[(c * S + py * P + ky) * S + px * P + kx]!;
          return s;
        }),
      );
  const pos = get('embeddings.position_embedding.weight');
  const embedded = rows.map((r, t) => r.map((v, i) => v + pos.data[t * D + i]!));
  let h = siglip ? embedded : layerNorm(embedded, get('pre_layrnorm.weight'), get('pre_layrnorm.bias'), eps);
  const states = [h];
  const nh = VISION.num_attention_heads;
  const hd = D / nh;
  for (let l = 0; l < VISION.num_hidden_layers; l++) {
    const p = (k: string) => get(`encoder.layers.${l}.${k}`);
    const x = layerNorm(h, p('layer_norm1.weight'), p('layer_norm1.bias'), eps);
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
    const y = layerNorm(h, p('layer_norm2.weight'), p('layer_norm2.bias'), eps);
    const mlp = lin(
      lin(y, p('mlp.fc1.weight'), p('mlp.fc1.bias')).map((r) => r.map(act)),
      p('mlp.fc2.weight'),
      p('mlp.fc2.bias'),
    );
    h = h.map((r, t) => r.map((a, i) => a + mlp[t]![i]!));
    states.push(h);
  }
  return states;
}

/** get_image_features + the projector for one image. */
export function llavaReference(w: Map<string, F32>, pix: Float32Array, layers: number[], strategy: string): Rows {
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

/** A text_config object. */
export type TextConfig = typeof TEXT | Record<string, unknown>;
/** The text config's sizes. */
export const dims = (t: TextConfig) =>
  t as { hidden_size: number; vocab_size: number; num_hidden_layers: number; num_attention_heads: number };

/** A random LLaVA checkpoint (Hub keys) for `layers` feature layers over the text model `text` (+ `image_newline` when asked). */
export function llavaCheckpoint(layers: number, text: TextConfig, newline = false, siglip = false): Map<string, F32> {
  const r = rng(7);
  const w = new Map<string, F32>();
  const put = (k: string, shape: number[], scale: number, center = 0) =>
    w.set(k, { shape, data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => center + scale * r()) });
  const D = VISION.hidden_size;
  const V = 'vision_tower.vision_model';
  const T = (siglip ? 0 : 1) + (VISION.image_size / VISION.patch_size) ** 2;
  put(`${V}.embeddings.patch_embedding.weight`, [D, 3, VISION.patch_size, VISION.patch_size], 0.2);
  if (siglip) put(`${V}.embeddings.patch_embedding.bias`, [D], 0.1);
  else put(`${V}.embeddings.class_embedding`, [D], 0.5);
  put(`${V}.embeddings.position_embedding.weight`, [T, D], 0.5);
  if (!siglip) {
    put(`${V}.pre_layrnorm.weight`, [D], 0.1, 1);
    put(`${V}.pre_layrnorm.bias`, [D], 0.1);
  }
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
  const H = dims(text).hidden_size;
  put('multi_modal_projector.linear_1.weight', [H, D * layers], 0.3);
  put('multi_modal_projector.linear_1.bias', [H], 0.1);
  put('multi_modal_projector.linear_2.weight', [H, H], 0.3);
  put('multi_modal_projector.linear_2.bias', [H], 0.1);
  if (newline) put('image_newline', [H], 0.5);
  for (const [k, t] of randomCheckpoint(text, 3)) w.set(k.startsWith('model.') || k === 'lm_head.weight' ? `language_model.${k}` : k, t);
  return w;
}
