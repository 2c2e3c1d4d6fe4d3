/**
 * Faults during `weight-spec prepare` (the real CLI, dist/cli.js): a full disk (tmpfs, or
 * RLIMIT_FSIZE), a source shard deleted mid-run, SIGKILL at seeded random moments. Each run
 * ends in a clear one-line error or a complete prepared checkpoint — never a directory with
 * the sentinel whose tensors are wrong or missing — and a re-run repairs what was left.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { Checkpoint, serializeSafetensors } from '../../src/formats/safetensors';
import { REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { havePrlimit, listTree, mountSmallFs, rng, runChild } from '../support/faults-harness';

const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');
const SENTINEL = '.checkpoint_prepared';
const LAYERS = 12;
const H = 256;
let tmp: string;
const makeTmp = tempDirs('ws-faults-prep-');
let src: string;
/** key → expected float32 bytes (bf16 source widened exactly). */
const expected = new Map<string, Uint8Array>();

/** A llama-shaped bf16 checkpoint in 3 shards + index, ~4.5 MiB (→ ~9 MiB prepared as f32). */
function makeCheckpoint(dir: string): void {
  fs.mkdirSync(dir, { recursive: true });
  const config = {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    hidden_size: H,
    intermediate_size: H,
    num_hidden_layers: LAYERS,
    num_attention_heads: 4,
    num_key_value_heads: 4,
    vocab_size: H,
    max_position_embeddings: 64,
    rms_norm_eps: 1e-5,
    tie_word_embeddings: false,
    torch_dtype: 'bfloat16',
  };
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config));
  const names: string[] = ['model.embed_tokens.weight', 'lm_head.weight', 'model.norm.weight'];
  for (let l = 0; l < LAYERS; l++) {
    for (const p of [
      'self_attn.q_proj',
      'self_attn.k_proj',
      'self_attn.v_proj',
      'self_attn.o_proj',
      'mlp.gate_proj',
      'mlp.up_proj',
      'mlp.down_proj',
    ])
      names.push(`model.layers.${l}.${p}.weight`);
    names.push(`model.layers.${l}.input_layernorm.weight`, `model.layers.${l}.post_attention_layernorm.weight`);
  }
  const shards: { key: string; dtype: 'BF16'; shape: number[]; data: Uint8Array }[][] = [[], [], []];
  const weightMap: Record<string, string> = {};
  names.forEach((key, i) => {
    const shape = key.endsWith('norm.weight') ? [H] : [H, H];
    const n = shape.reduce((a, b) => a * b, 1);
    const bf = new Uint16Array(n);
    for (let j = 0; j < n; j++) bf[j] = 0x3c00 + ((i * 7 + j) % 512); // finite bf16 values
    const f32 = new Uint32Array(n);
    for (let j = 0; j < n; j++) f32[j] = bf[j]! << 16;
    expected.set(key, new Uint8Array(f32.buffer));
    const s = i % 3;
    shards[s]!.push({ key, dtype: 'BF16', shape, data: new Uint8Array(bf.buffer) });
    weightMap[key] = `model-0000${s + 1}-of-00003.safetensors`;
  });
  shards.forEach((ts, s) => fs.writeFileSync(path.join(dir, `model-0000${s + 1}-of-00003.safetensors`), serializeSafetensors(ts)));
  fs.writeFileSync(path.join(dir, 'model.safetensors.index.json'), JSON.stringify({ metadata: {}, weight_map: weightMap }));
}

/** 'complete' when the sentinel is there and every tensor is exact; 'absent' when not prepared. */
async function state(out: string): Promise<'complete' | 'absent'> {
  if (!fs.existsSync(path.join(out, SENTINEL))) return 'absent';
  const ck = await Checkpoint.open(out);
  expect(ck.keys().length).toBe(expected.size);
  for (const [k, v] of expected) expect(Buffer.from(await ck.read(k)).equals(Buffer.from(v))).toBe(true);
  return 'complete';
}

const prepare = (out: string, extra: Parameters<typeof runChild>[2] = {}) =>
  runChild(CLI, ['prepare', '--checkpoint', src, '--dtype', 'float32', '--out', out], extra);

beforeAll(() => {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} missing: run node scripts/bundle.mjs first`);
  tmp = makeTmp();
  src = path.join(tmp, 'src');
  makeCheckpoint(src);
});

describe('prepare under faults', () => {
  it('baseline: prepare completes and is exact', async () => {
    const r = await prepare(path.join(tmp, 'baseline'));
    expect(r.stderr.split('\n').filter((l) => l.startsWith('weight-spec:'))).toEqual([]);
    expect(r.code).toBe(0);
    expect(await state(path.join(tmp, 'baseline'))).toBe('complete');
  });

  it('disk full: a one-line error, nothing that looks prepared, and a re-run with space repairs', async () => {
    const mnt = path.join(tmp, 'small');
    const small = mountSmallFs(mnt, 4 * 1024 * 1024);
    const out = path.join(mnt, 'out');
    try {
      const r = small ? await prepare(out) : havePrlimit() ? await prepare(out, { fsizeBytes: 4 * 1024 * 1024 }) : undefined;
      if (!r) throw new Error('neither tmpfs nor prlimit is available to simulate a full disk');
      expect(r.code).toBe(1);
      const errs = r.stderr
        .trim()
        .split('\n')
        .filter((l) => l.startsWith('weight-spec:'));
      expect(errs).toHaveLength(1);
      expect(errs[0]).toMatch(/ENOSPC|no space|EFBIG|file size/i);
      expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
      expect(listTree(mnt).filter((n) => n.endsWith(SENTINEL))).toEqual([]);
      expect(await state(out)).toBe('absent');
      if (small) {
        // Give the same location room (bigger tmpfs over it) and re-run: repaired in place.
        small.unmount();
        const big = mountSmallFs(mnt, 64 * 1024 * 1024)!;
        try {
          const again = await prepare(out);
          expect(again.code, again.stderr).toBe(0);
          expect(await state(out)).toBe('complete');
        } finally {
          big.unmount();
        }
      }
    } finally {
      small?.unmount();
    }
  }, 120_000);

  it('a source shard deleted mid-run: a clear error naming it, or a complete run; a re-run repairs', async () => {
    const out = path.join(tmp, 'deleted');
    const victim = path.join(src, 'model-00003-of-00003.safetensors');
    const saved = fs.readFileSync(victim);
    const run = prepare(out);
    // Delete the shard as soon as the run starts writing its temp sibling.
    const t0 = Date.now();
    while (!fs.readdirSync(tmp).some((n) => n.startsWith('deleted.tmp-')) && Date.now() - t0 < 20_000)
      await new Promise((r) => setImmediate(r));
    fs.rmSync(victim);
    const r = await run;
    fs.writeFileSync(victim, saved);
    const s = await state(out);
    if (r.code !== 0) {
      expect(s).toBe('absent');
      const errs = r.stderr
        .trim()
        .split('\n')
        .filter((l) => l.startsWith('weight-spec:'));
      expect(errs).toHaveLength(1);
      expect(errs[0]).toMatch(/model-00003-of-00003\.safetensors|changed|missing|no such file/i);
    } else {
      expect(s).toBe('complete');
    }
    console.log(
      `[faults] prepare with a shard deleted mid-run: exit ${r.code}, ${s}${r.code ? `: ${r.stderr.trim().split('\n').pop()}` : ''}`,
    );
    const again = await prepare(out);
    expect(again.code, again.stderr).toBe(0);
    expect(await state(out)).toBe('complete');
  }, 120_000);

  it('SIGKILL at random moments: complete or absent, and a re-run repairs and cleans up', async () => {
    const base = await prepare(path.join(tmp, 'timing'));
    expect(base.code).toBe(0);
    const next = rng(4242);
    const results: string[] = [];
    let killed = 0;
    // Up to 16 attempts until 4 runs were killed mid-way (see faults-compile for the scheme).
    let window = base.ms;
    for (let k = 0; k < 16 && killed < 4; k++) {
      const out = path.join(tmp, `kill-${k}`);
      const r = await prepare(out, { killAfterMs: Math.round(window * (0.2 + next(1000) / 1000)) });
      if (r.signal === 'SIGKILL') killed++;
      else window *= 0.8;
      const s = await state(out);
      results.push(`${r.signal ?? r.code}:${s}`);
      const again = await prepare(out);
      expect(again.code, again.stderr).toBe(0);
      expect(await state(out)).toBe('complete');
      expect(fs.readdirSync(tmp).filter((n) => n.startsWith(`kill-${k}.`))).toEqual([]);
    }
    console.log(`[faults] prepare kills (full run ${base.ms} ms): ${results.join(', ')}`);
    expect(killed).toBeGreaterThanOrEqual(4);
  }, 300_000);
});
