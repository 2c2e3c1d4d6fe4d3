/**
 * `export --onnx` on a legacy-style model made in code: a chain of MatMuls whose weights are
 * embedded as `onnx::MatMul_N` = W.T (as constant folding stores them), plus a norm-like
 * `onnx::Mul_N`. Checks (1) the weight-free export, prepared and compiled, computes what
 * the embedded model computes in ONNX Runtime, and (2) converting weights far larger than
 * `--max-ram-mb` keeps the process's peak RSS bounded.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fromFloat32, toFloat32 } from '../../src/formats/float-convert';
import { encodeModel, makeNode, makeTensor, makeValueInfo, type ModelProto } from '../../src/formats/onnx';
import { writeSafetensors } from '../../src/formats/safetensors';
import { rng } from '../../src/foundation/rng';
import { REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const tmpDir = tempDirs('ws-');

const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');
const next = rng(99);

function bf16Values(n: number, scale: number): Float32Array {
  const v = new Float32Array(n);
  for (let i = 0; i < n; i++) v[i] = (next() * 2 - 1) * scale;
  return toFloat32(fromFloat32(v, 'BF16'), 'BF16');
}

function transpose(v: Float32Array, r: number, c: number): Float32Array {
  const out = new Float32Array(v.length);
  for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) out[j * r + i] = v[i * c + j]!;
  return out;
}

const f32 = (v: Float32Array) => new Uint8Array(v.buffer, v.byteOffset, v.byteLength);

/**
 * Writes `dir/model.safetensors`, `dir/config.json` and legacy ONNX files with `layers` n×n
 * weights: `legacy.onnx` uses every layer; `graphs` names more files using a subset each
 * (several graphs over one checkpoint, as a VLM's encoder and decoder are).
 */
async function makeLegacy(dir: string, n: number, layers: number, graphs: Record<string, number[]> = {}): Promise<void> {
  const tensors = [];
  const weights: { w: Float32Array; g: Float32Array }[] = [];
  for (let l = 0; l < layers; l++) {
    const w = bf16Values(n * n, 1 / Math.sqrt(n)); // torch Linear weight [out, in]
    const g = bf16Values(n, 1);
    weights.push({ w, g });
    tensors.push({ key: `model.layers.${l}.mlp.down_proj.weight`, dtype: 'BF16' as const, shape: [n, n], data: fromFloat32(w, 'BF16') });
    tensors.push({
      key: `model.layers.${l}.post_attention_layernorm.weight`,
      dtype: 'BF16' as const,
      shape: [n],
      data: fromFloat32(g, 'BF16'),
    });
  }
  const all = Array.from({ length: layers }, (_, l) => l);
  for (const [file, use] of Object.entries({ 'legacy.onnx': all, ...graphs })) {
    const inits = [];
    const nodes = [];
    let cur = 'x';
    for (const l of use) {
      const { w, g } = weights[l]!;
      inits.push(makeTensor(`onnx::MatMul_${100 + l}`, 'F32', [n, n], f32(transpose(w, n, n))));
      // Odd layers fold a Gemma-style norm: the export stores (1 + weight), computed in f32.
      const folded = l % 2 === 1 ? g.map((v) => Math.fround(v + 1)) : g;
      inits.push(makeTensor(`onnx::Mul_${200 + l}`, 'F32', [n], f32(folded)));
      nodes.push(makeNode('MatMul', [cur, `onnx::MatMul_${100 + l}`], [`/l${l}/MatMul_output_0`], [], `/l${l}/MatMul`));
      nodes.push(makeNode('Mul', [`/l${l}/MatMul_output_0`, `onnx::Mul_${200 + l}`], [`/l${l}/Mul_output_0`], [], `/l${l}/Mul`));
      cur = `/l${l}/Mul_output_0`;
    }
    nodes.push(makeNode('Identity', [cur], ['y']));
    const model: ModelProto = {
      irVersion: 7,
      producerName: 'pytorch',
      opsetImport: [{ domain: '', version: 14 }],
      graph: {
        name: 'legacy',
        node: nodes,
        initializer: inits,
        input: [makeValueInfo('x', 'F32', [1, n])],
        output: [makeValueInfo('y', 'F32', [1, n])],
      },
    };
    writeFileSync(path.join(dir, file), encodeModel(model));
  }
  writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ model_type: 'llama', tie_word_embeddings: false }));
  await writeSafetensors(path.join(dir, 'model.safetensors'), tensors);
}

/** Runs the CLI with a preload that reports the process's peak RSS (bytes). */
function cliWithRss(args: string[]): { code: number; stderr: string; maxRss: number } {
  const scratch = tmpDir('ws-rss-');
  const hook = path.join(scratch, 'rss-hook.cjs');
  const out = path.join(scratch, 'rss.txt');
  // VmHWM (peak RSS of this address space) — unlike getrusage's maxrss, which Linux carries
  // across fork+exec from the (large) test process.
  writeFileSync(
    hook,
    `process.on('exit', () => { const m = /VmHWM:\\s+(\\d+) kB/.exec(require('fs').readFileSync('/proc/self/status', 'utf8')); require('fs').writeFileSync(${JSON.stringify(out)}, String(Number(m[1]) * 1024)); });`,
  );
  const r = spawnSync(process.execPath, ['--require', hook, CLI, ...args], {
    encoding: 'utf8',
    env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off' },
  });
  return { code: r.status ?? -1, stderr: r.stderr, maxRss: Number(readFileSync(out, 'utf8')) };
}

async function runOrt(model: string, x: Float32Array, n: number): Promise<Float32Array> {
  const ort = await import('onnxruntime-node');
  const s = await ort.InferenceSession.create(model);
  const out = await s.run({ x: new ort.Tensor('float32', x, [1, n]) });
  return out[s.outputNames[0]!]!.data as Float32Array;
}

describe('export --onnx on a legacy-style model made in code', () => {
  it('computes exactly what the embedded model computes, after prepare and compile', async () => {
    const dir = tmpDir('ws-legacy-parity-');
    const ckpt = path.join(dir, 'ckpt');
    spawnSync('mkdir', ['-p', ckpt]);
    const n = 48;
    await makeLegacy(ckpt, n, 3);
    const out = path.join(dir, 'export');
    for (const args of [
      ['export', '--onnx', path.join(ckpt, 'legacy.onnx'), '--checkpoint', ckpt, '--out', out],
      ['prepare', '--checkpoint', ckpt, '--dtype', 'float32'],
      ['compile', out],
    ]) {
      const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
    }
    const report = JSON.parse(readFileSync(path.join(out, 'export-report.json'), 'utf8'));
    expect(report.unresolved).toEqual([]);
    expect(report.totals.by_strategy).toEqual({ 'content-transposed': 3, content: 2, 'content-affine': 1 });
    const compiled = JSON.parse(readFileSync(path.join(out, 'compile.json'), 'utf8'));
    const artifact: string = compiled.artifacts?.model ?? compiled.artifact ?? compiled.model;
    expect(typeof artifact).toBe('string');
    const x = bf16Values(n, 1);
    const want = await runOrt(path.join(ckpt, 'legacy.onnx'), x, n);
    const got = await runOrt(path.isAbsolute(artifact) ? artifact : path.join(out, artifact), x, n);
    expect(Array.from(got)).toEqual(Array.from(want));
  });

  it('keeps peak memory bounded when the weights exceed --max-ram-mb', async () => {
    const dir = tmpDir('ws-legacy-mem-');
    const ckpt = path.join(dir, 'ckpt');
    spawnSync('mkdir', ['-p', ckpt]);
    const n = 2048;
    const layers = 8; // 8 × 16 MiB of f32 weights in the ONNX = 128 MiB
    await makeLegacy(ckpt, n, layers);
    const weightBytes = layers * n * n * 4;
    const base = cliWithRss(['inspect', path.join(ckpt, 'config.json')]);
    const r = cliWithRss([
      'export',
      '--onnx',
      path.join(ckpt, 'legacy.onnx'),
      '--checkpoint',
      ckpt,
      '--out',
      path.join(dir, 'export'),
      '--max-ram-mb',
      '16',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const growth = r.maxRss - base.maxRss;
    console.log(
      `export --onnx: ${weightBytes >> 20} MiB of weights, peak RSS ${(r.maxRss / 2 ** 20).toFixed(1)} MiB (baseline ${(base.maxRss / 2 ** 20).toFixed(1)} MiB)`,
    );
    // Loading the legacy weights (or one f32 copy of the checkpoint) would alone exceed this.
    expect(growth).toBeLessThan(weightBytes / 2);
  });

  it('gives several graphs over one checkpoint each its own spec over the same prepared files', async () => {
    const dir = tmpDir('ws-legacy-shared-');
    const ckpt = path.join(dir, 'ckpt');
    spawnSync('mkdir', ['-p', ckpt]);
    const n = 16;
    await makeLegacy(ckpt, n, 4, { 'encoder.onnx': [0, 1], 'decoder.onnx': [2, 3] });
    const specs = [];
    for (const g of ['encoder', 'decoder']) {
      const out = path.join(dir, g);
      const r = spawnSync(process.execPath, [CLI, 'export', '--onnx', path.join(ckpt, `${g}.onnx`), '--checkpoint', ckpt, '--out', out], {
        encoding: 'utf8',
      });
      expect(r.status, r.stderr).toBe(0);
      specs.push(JSON.parse(readFileSync(path.join(out, 'weight_spec.json'), 'utf8')));
    }
    expect(specs[0].files).toEqual(specs[1].files);
    expect(specs[0].model_id).toBe(specs[1].model_id);
    const keys = (s: { inputs: { location: { key: string } }[] }) => s.inputs.map((i) => i.location.key).sort();
    expect(keys(specs[0])).toEqual([
      'model.layers.0.mlp.down_proj.weight',
      'model.layers.0.post_attention_layernorm.weight',
      'model.layers.1.mlp.down_proj.weight',
      'model.layers.1.post_attention_layernorm.weight',
    ]);
    expect(keys(specs[1])).toEqual([
      'model.layers.2.mlp.down_proj.weight',
      'model.layers.2.post_attention_layernorm.weight',
      'model.layers.3.mlp.down_proj.weight',
      'model.layers.3.post_attention_layernorm.weight',
    ]);
  });
});
