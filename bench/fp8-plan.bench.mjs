// Benchmark (issue 24): the real Qwen3-30B-A3B-FP8 layout planned from safetensors headers
// alone. A checkpoint with the same key set — 48 layers, 128 experts each with FP8 gate/up/
// down_proj.weight + weight_scale_inv (block 128, F32 scales), FP8 attention projections with
// their scales, BF16 router (mlp.gate), norms (incl. q_norm/k_norm), embeddings and lm_head,
// in 16 shards with an index — is generated with every width divided by 16 (hidden 2048 →
// 128, moe_intermediate 768 → 48, head_dim 128 → 8, vocab 151936 → 9496; block 128 kept, so
// edge blocks are partial). Its tensor data is sparse (never written). `export --config` then
// plans the prepared layout (the prepare planner, headers only) and builds the 48-layer MoE
// graph against it. Checks: every weight input maps to a prepared key, no *_scale_inv ever
// becomes an input, experts are stacked per layer, the router stays; the CLI process reads far
// fewer bytes than the tensor data (/proc/self/io rchar) — the data is never touched.
// Prints the timings. Run after `node scripts/bundle.mjs` (npm run bench does).
import { spawnSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  ftruncateSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cli = path.join(root, 'dist', 'cli.js');
if (!existsSync(cli)) {
  console.error('fp8-plan.bench: dist/cli.js missing; run `node scripts/bundle.mjs` first');
  process.exit(1);
}
const tmp = mkdtempSync(path.join(os.tmpdir(), 'ws-fp8-bench-'));
const src = path.join(tmp, 'Qwen3-30B-A3B-FP8-scaled');
mkdirSync(src);
const fail = (msg) => {
  console.error(`fp8-plan.bench: ${msg}`);
  rmSync(tmp, { recursive: true, force: true });
  process.exit(1);
};

// ---- the real config, widths / 16, plus the FP8 quantization_config of the released checkpoint
const real = JSON.parse(readFileSync(path.join(root, '..', 'shared', 'configs', 'qwen3-30b-a3b.json'), 'utf8'));
const S = 16;
const config = {
  ...real,
  hidden_size: real.hidden_size / S,
  intermediate_size: real.intermediate_size / S,
  moe_intermediate_size: real.moe_intermediate_size / S,
  head_dim: real.head_dim / S,
  vocab_size: Math.ceil(real.vocab_size / S),
  quantization_config: { activation_scheme: 'dynamic', fmt: 'e4m3', quant_method: 'fp8', weight_block_size: [128, 128] },
};
const L = config.num_hidden_layers;
const E = config.num_experts;
const H = config.hidden_size;
const I = config.moe_intermediate_size;
const D = config.head_dim;
const B = 128;
const SIZE = { BF16: 2, F32: 4, F8_E4M3: 1 };
const cdiv = (a, b) => Math.ceil(a / b);

/** [key, dtype, shape] in the released checkpoint's per-layer order. */
const tensors = [['model.embed_tokens.weight', 'BF16', [config.vocab_size, H]]];
const fp8 = (key, r, c) => tensors.push([`${key}.weight`, 'F8_E4M3', [r, c]], [`${key}.weight_scale_inv`, 'F32', [cdiv(r, B), cdiv(c, B)]]);
for (let l = 0; l < L; l++) {
  const p = `model.layers.${l}`;
  tensors.push([`${p}.input_layernorm.weight`, 'BF16', [H]], [`${p}.post_attention_layernorm.weight`, 'BF16', [H]]);
  for (let e = 0; e < E; e++) {
    fp8(`${p}.mlp.experts.${e}.down_proj`, H, I);
    fp8(`${p}.mlp.experts.${e}.gate_proj`, I, H);
    fp8(`${p}.mlp.experts.${e}.up_proj`, I, H);
  }
  tensors.push([`${p}.mlp.gate.weight`, 'BF16', [E, H]]);
  tensors.push([`${p}.self_attn.k_norm.weight`, 'BF16', [D]], [`${p}.self_attn.q_norm.weight`, 'BF16', [D]]);
  fp8(`${p}.self_attn.k_proj`, config.num_key_value_heads * D, H);
  fp8(`${p}.self_attn.o_proj`, H, config.num_attention_heads * D);
  fp8(`${p}.self_attn.q_proj`, config.num_attention_heads * D, H);
  fp8(`${p}.self_attn.v_proj`, config.num_key_value_heads * D, H);
}
tensors.push(['model.norm.weight', 'BF16', [H]], ['lm_head.weight', 'BF16', [config.vocab_size, H]]);

// ---- 16 shards, headers written by hand, data sparse (ftruncate)
const SHARDS = 16;
const per = Math.ceil(tensors.length / SHARDS);
const weightMap = {};
let dataBytes = 0;
const t0 = performance.now();
for (let s = 0; s < SHARDS; s++) {
  const name = `model-${String(s + 1).padStart(5, '0')}-of-${String(SHARDS).padStart(5, '0')}.safetensors`;
  const header = { __metadata__: { format: 'pt' } };
  let off = 0;
  for (const [key, dtype, shape] of tensors.slice(s * per, (s + 1) * per)) {
    const n = shape.reduce((a, b) => a * b, 1) * SIZE[dtype];
    header[key] = { dtype, shape, data_offsets: [off, off + n] };
    off += n;
    weightMap[key] = name;
  }
  let json = Buffer.from(JSON.stringify(header));
  json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  const fd = openSync(path.join(src, name), 'w');
  writeSync(fd, len);
  writeSync(fd, json);
  ftruncateSync(fd, 8 + json.length + off);
  closeSync(fd);
  dataBytes += off;
}
writeFileSync(
  path.join(src, 'model.safetensors.index.json'),
  JSON.stringify({ metadata: { total_size: dataBytes }, weight_map: weightMap }),
);
writeFileSync(path.join(src, 'config.json'), JSON.stringify(config, null, 2));
const genMs = performance.now() - t0;

// ---- export --config: plans the prepared layout from the headers and builds the graph
const counter = path.join(tmp, 'rchar.cjs');
writeFileSync(
  counter,
  `process.on('exit', () => { const m = /rchar: (\\d+)/.exec(require('fs').readFileSync('/proc/self/io', 'utf8')); process.stderr.write('RCHAR ' + (m ? m[1] : -1) + '\\n'); });\n`,
);
const out = path.join(tmp, 'export');
const runs = [];
for (let round = 0; round < 3; round++) {
  rmSync(out, { recursive: true, force: true });
  const t = performance.now();
  const r = spawnSync(process.execPath, ['-r', counter, cli, 'export', '--config', src, '--out', out, '--ctx-len', '4096'], {
    encoding: 'utf8',
    env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off' },
  });
  const ms = performance.now() - t;
  if (r.status !== 0) fail(`export --config failed (${r.status}): ${r.stderr.trim()}`);
  const rchar = Number(/RCHAR (-?\d+)/.exec(r.stderr)?.[1] ?? -1);
  runs.push({ ms, rchar });
}

// ---- what was planned
const spec = JSON.parse(readFileSync(path.join(out, 'weight_spec.json'), 'utf8'));
const report = JSON.parse(readFileSync(path.join(out, 'export-report.json'), 'utf8'));
const names = spec.inputs.map((i) => i.name);
const keys = spec.inputs.map((i) => i.location.key);
const scales = [...names, ...keys].filter((k) => /scale/.test(k));
if (scales.length) fail(`scale tensors became graph inputs: ${scales.slice(0, 3).join(', ')}`);
const moeLayers = new Set(keys.filter((k) => /\.mlp\.moe_weights\./.test(k)).map((k) => /layers\.(\d+)\./.exec(k)[1]));
if (moeLayers.size !== L) fail(`stacked experts in ${moeLayers.size} layers, expected ${L}`);
if (!keys.includes('model.layers.0.mlp.gate.weight')) fail('the router model.layers.0.mlp.gate.weight is not an input');
const files = new Set(spec.files.map((f) => f.path.split('/').pop()));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rchar = Math.max(...runs.map((r) => r.rchar));
if (rchar < 0) console.log('note: /proc/self/io unavailable; bytes read not measured');
else if (rchar > dataBytes / 4)
  fail(`the CLI read ${rchar} bytes, more than a quarter of the ${dataBytes} bytes of tensor data: not headers only`);

console.log(
  `checkpoint: Qwen3-30B-A3B-FP8 key set (${tensors.length} tensors: ${L} layers × ${E} experts, FP8 block ${B}, widths / ${S}), ${SHARDS} shards, ${(dataBytes / 1e6).toFixed(0)} MB of (sparse) tensor data, generated in ${genMs.toFixed(0)} ms`,
);
console.log(
  `export --config (plan from headers + graph): median ${median(runs.map((r) => r.ms)).toFixed(0)} ms (runs: ${runs.map((r) => r.ms.toFixed(0)).join(', ')} ms; planner ${report.timings_ms?.plan ?? '?'} ms, build ${report.timings_ms?.build ?? '?'} ms in the last)`,
);
console.log(
  `planned: ${spec.inputs.length} weight inputs over ${files.size} prepared files (${[...files].filter((f) => f.startsWith('experts-')).length} experts-layer files), 0 scale inputs, router kept`,
);
console.log(
  `bytes read by the CLI process: ${rchar >= 0 ? `${(rchar / 1e6).toFixed(1)} MB (its own code and headers; tensor data ${(dataBytes / 1e6).toFixed(0)} MB untouched)` : 'n/a'}`,
);
console.log(
  `load average ${os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')}`,
);
if (!process.env.WS_FP8_BENCH_KEEP) rmSync(tmp, { recursive: true, force: true });
else console.log(tmp);
