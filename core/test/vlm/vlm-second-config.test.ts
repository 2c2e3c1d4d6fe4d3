/**
 * A second Qwen3-VL configuration of our own, checked end to end (export --config → prepare →
 * compile → run --pixel-values) against an independent numpy port of HF transformers 4.57
 * (core/test/support/qwen3_vl_reference.py: vision tower, get_rope_index, text model in float64):
 * non-square image grids, two images of different sizes in one prompt, other deepstack
 * indexes ([1, 3] of 4 blocks), a different layer count (3, one dense via mlp_only_layers),
 * head_dim 16 with GQA 4/1 and mrope_section [2, 3, 3]; the same for the dense sibling
 * `qwen3_vl`. Weights are random, written in code as a released-layout checkpoint (fused
 * experts `gate_up_proj [E, H, 2I]`, `down_proj [E, I, H]`).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeSafetensors } from '../../src/formats/safetensors';
import { fixturesDir, haveFixtures, REPO_ROOT } from '../../../test/support/fixtures';
import { PYTHON, haveOnnxChecker } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';

const cli = path.join(REPO_ROOT, 'dist', 'cli.js');
const tmp = tempDirs('ws-vlm-second-');
const hasNumpy = () => spawnSync(PYTHON, ['-c', 'import numpy'], { encoding: 'utf8' }).status === 0 || haveOnnxChecker();

/** Deterministic normal-ish numbers (xorshift + Box–Muller). */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  const u = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return ((s >>> 0) + 0.5) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u());
}

function config(type: 'qwen3_vl_moe' | 'qwen3_vl'): Record<string, unknown> {
  return {
    model_type: type,
    image_token_id: 90,
    video_token_id: 91,
    vision_start_token_id: 92,
    vision_end_token_id: 93,
    tie_word_embeddings: false,
    vision_config: {
      depth: 4,
      hidden_size: 24,
      num_heads: 2,
      intermediate_size: 40,
      hidden_act: 'gelu_pytorch_tanh',
      patch_size: 2,
      temporal_patch_size: 2,
      spatial_merge_size: 2,
      in_channels: 3,
      out_hidden_size: 48,
      num_position_embeddings: 16,
      deepstack_visual_indexes: [1, 3],
    },
    text_config: {
      vocab_size: 100,
      hidden_size: 48,
      intermediate_size: 40,
      num_hidden_layers: 3,
      num_attention_heads: 4,
      num_key_value_heads: 1,
      head_dim: 16,
      rms_norm_eps: 1e-6,
      rope_theta: 10000,
      hidden_act: 'silu',
      rope_scaling: { rope_type: 'default', mrope_section: [2, 3, 3], mrope_interleaved: true },
      ...(type === 'qwen3_vl_moe'
        ? {
            num_experts: 4,
            num_experts_per_tok: 2,
            moe_intermediate_size: 24,
            norm_topk_prob: true,
            decoder_sparse_step: 1,
            mlp_only_layers: [1],
          }
        : {}),
    },
  };
}

function weights(type: 'qwen3_vl_moe' | 'qwen3_vl'): { key: string; shape: number[] }[] {
  const out: { key: string; shape: number[] }[] = [];
  const add = (key: string, shape: number[]) => out.push({ key, shape });
  const V = 'model.visual';
  add(`${V}.patch_embed.proj.weight`, [24, 3, 2, 2, 2]);
  add(`${V}.patch_embed.proj.bias`, [24]);
  add(`${V}.pos_embed.weight`, [16, 24]);
  for (let i = 0; i < 4; i++) {
    const b = `${V}.blocks.${i}`;
    for (const n of ['norm1', 'norm2']) (add(`${b}.${n}.weight`, [24]), add(`${b}.${n}.bias`, [24]));
    (add(`${b}.attn.qkv.weight`, [72, 24]), add(`${b}.attn.qkv.bias`, [72]));
    (add(`${b}.attn.proj.weight`, [24, 24]), add(`${b}.attn.proj.bias`, [24]));
    (add(`${b}.mlp.linear_fc1.weight`, [40, 24]), add(`${b}.mlp.linear_fc1.bias`, [40]));
    (add(`${b}.mlp.linear_fc2.weight`, [24, 40]), add(`${b}.mlp.linear_fc2.bias`, [24]));
  }
  for (const [m, normSize] of [
    [`${V}.merger`, 24],
    [`${V}.deepstack_merger_list.0`, 96],
    [`${V}.deepstack_merger_list.1`, 96],
  ] as const) {
    (add(`${m}.norm.weight`, [normSize]), add(`${m}.norm.bias`, [normSize]));
    (add(`${m}.linear_fc1.weight`, [96, 96]), add(`${m}.linear_fc1.bias`, [96]));
    (add(`${m}.linear_fc2.weight`, [48, 96]), add(`${m}.linear_fc2.bias`, [48]));
  }
  const T = 'model.language_model';
  add(`${T}.embed_tokens.weight`, [100, 48]);
  for (let i = 0; i < 3; i++) {
    const l = `${T}.layers.${i}`;
    (add(`${l}.input_layernorm.weight`, [48]), add(`${l}.post_attention_layernorm.weight`, [48]));
    (add(`${l}.self_attn.q_proj.weight`, [64, 48]),
      add(`${l}.self_attn.k_proj.weight`, [16, 48]),
      add(`${l}.self_attn.v_proj.weight`, [16, 48]));
    add(`${l}.self_attn.o_proj.weight`, [48, 64]);
    (add(`${l}.self_attn.q_norm.weight`, [16]), add(`${l}.self_attn.k_norm.weight`, [16]));
    if (type === 'qwen3_vl_moe' && i !== 1) {
      add(`${l}.mlp.gate.weight`, [4, 48]);
      add(`${l}.mlp.experts.gate_up_proj`, [4, 48, 48]);
      add(`${l}.mlp.experts.down_proj`, [4, 24, 48]);
    } else {
      (add(`${l}.mlp.gate_proj.weight`, [40, 48]), add(`${l}.mlp.up_proj.weight`, [40, 48]), add(`${l}.mlp.down_proj.weight`, [48, 40]));
    }
  }
  add(`${T}.norm.weight`, [48]);
  add('lm_head.weight', [100, 48]);
  return out;
}

const maxDiff = (a: number[], b: number[]) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i]!)), 0);

describe.runIf(hasNumpy())('a second Qwen3-VL configuration vs an independent numpy implementation', () => {
  it.runIf(haveFixtures())(
    "the numpy port itself reproduces the fixture's HF reference (logits, image_embeds ≤ 1e-4)",
    () => {
      const fx = path.join(fixturesDir(), 'qwen3_vl_moe');
      const r = JSON.parse(readFileSync(path.join(fx, 'reference.json'), 'utf8'));
      const work = tmp();
      writeFileSync(
        path.join(work, 'in.json'),
        JSON.stringify({
          ids: [...r.input_ids, ...r.generated_ids.slice(0, -1)],
          pixel_values: r.pixel_values,
          image_grid_thw: r.image_grid_thw,
        }),
      );
      const py = spawnSync(
        PYTHON,
        [
          path.join(__dirname, '../support/qwen3_vl_reference.py'),
          path.join(fx, 'model.safetensors'),
          path.join(fx, 'config.json'),
          path.join(work, 'in.json'),
          path.join(work, 'out.json'),
        ],
        { encoding: 'utf8' },
      );
      expect(py.stderr).toBe('');
      const out = JSON.parse(readFileSync(path.join(work, 'out.json'), 'utf8'));
      expect(maxDiff((out.logits as number[][]).flat(), (r.logits as number[][]).flat())).toBeLessThan(1e-4);
      expect(maxDiff((out.image_embeds as number[][]).flat(), (r.image_embeds as number[][]).flat())).toBeLessThan(1e-4);
      expect(out.position_ids).toEqual(r.position_ids_logits);
    },
    60_000,
  );

  for (const type of ['qwen3_vl_moe', 'qwen3_vl'] as const) {
    it(`${type}: two non-square images (${type === 'qwen3_vl_moe' ? 'different sizes' : 'one size, one vision call'}), deepstack [1, 3], 3 layers, head_dim 16 — logits ≤ 1e-4, greedy ids equal`, async () => {
      const work = tmp();
      const model = path.join(work, 'model');
      mkdirSync(model);
      const cfg = config(type);
      writeFileSync(path.join(model, 'config.json'), JSON.stringify(cfg));
      const rand = rng(type === 'qwen3_vl' ? 7 : 11);
      await writeSafetensors(
        path.join(model, 'model.safetensors'),
        weights(type).map(({ key, shape }) => {
          const n = shape.reduce((a, b) => a * b, 1);
          const isNorm = /norm[12]?\.weight$|layernorm\.weight$|q_norm|k_norm/.test(key);
          const scale = key.endsWith('embed_tokens.weight') || key.includes('pos_embed') ? 1 : 0.2;
          const data = Float32Array.from({ length: n }, () => (isNorm ? 1 + 0.1 * rand() : scale * rand()));
          return { key, dtype: 'F32' as const, shape, data: new Uint8Array(data.buffer) };
        }),
      );
      // moe: image A grid 1×4×6 (merged 2×3 = 6 tokens) + image B 1×6×2 (3×1 = 3 tokens), one vision call each;
      // dense: two 1×4×6 images, which share one vision call (image_grid_thw [2, 1, 4, 6])
      const grids =
        type === 'qwen3_vl_moe'
          ? [
              [1, 4, 6],
              [1, 6, 2],
            ]
          : [
              [1, 4, 6],
              [1, 4, 6],
            ];
      const rows = grids.reduce((a, [t, h, w]) => a + t! * h! * w!, 0);
      const pixel = Array.from({ length: rows }, () => Array.from({ length: 24 }, () => Math.fround(rand())));
      writeFileSync(path.join(work, 'pixels.json'), JSON.stringify({ pixel_values: pixel, image_grid_thw: grids }));
      const tokens = (g: number[]) => (g[0]! * g[1]! * g[2]!) / 4;
      const ids = [5, 92, ...Array(tokens(grids[0]!)).fill(90), 93, 7, 8, 92, ...Array(tokens(grids[1]!)).fill(90), 93, 9, 10];
      writeFileSync(path.join(work, 'inputs.json'), JSON.stringify({ ids, pixel_values: pixel, image_grid_thw: grids, generate: 4 }));
      const py = spawnSync(
        PYTHON,
        [
          path.join(__dirname, '../support/qwen3_vl_reference.py'),
          path.join(model, 'model.safetensors'),
          path.join(model, 'config.json'),
          path.join(work, 'inputs.json'),
          path.join(work, 'ref.json'),
        ],
        { encoding: 'utf8' },
      );
      expect(py.stderr).toBe('');
      const ref = JSON.parse(readFileSync(path.join(work, 'ref.json'), 'utf8'));

      const ok = (...args: string[]) => {
        const r = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', cwd: work });
        if (r.status !== 0) throw new Error(`weight-spec ${args.join(' ')} → ${r.status}: ${r.stderr}`);
        return r;
      };
      ok('export', '--config', 'model', '--out', 'out');
      ok('prepare', '--checkpoint', 'model', '--dtype', 'float32');
      ok('compile', 'out');
      ok('run', 'out', '--pixel-values', 'pixels.json', '--input-ids', ids.join(','), '--dump-logits', 'logits.json');
      const got = JSON.parse(readFileSync(path.join(work, 'logits.json'), 'utf8')).logits as number[][];
      expect(got).toHaveLength(ids.length);
      expect(maxDiff(got.flat(), (ref.logits as number[][]).flat())).toBeLessThan(1e-4);
      const gen = ok('run', 'out', '--pixel-values', 'pixels.json', '--input-ids', ids.join(','), '--max-new-tokens', '4');
      expect(gen.stdout.trim()).toBe(ref.generated.join(','));
    }, 120_000);
  }
});
