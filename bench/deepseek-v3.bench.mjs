// Benchmark (issue 31, deepseek_v3): `export --config` of the published DeepSeek-V3 (671B) and
// Kimi-K2 (1T) configs (../shared/configs) in both MLA cache forms — targets < 1 s wall,
// < 200 MB peak RSS, model.onnx < 2 MiB — and the FP8 prepare of DeepSeek-V3's published
// layout planned without reading tensor data: a checkpoint with the released key set and sizes
// (61 layers + the MTP layer 61, 256 experts, FP8 e4m3 weights with 128×128 F32
// weight_scale_inv — partial blocks on kv_a_proj_with_mqa's 576 rows — BF16 norms, router,
// embeddings and head) over 163 sparse shards (headers real, data never written), so weights
// and their scales fall in different shards where the split lands between them. `export
// --config` on that folder plans the prepared layout from the headers (prepare's planner) and
// builds the graph; checks: no scale becomes an input, experts stacked in the 58 MoE layers, no
// MTP key in the spec, the CLI reads far fewer bytes than the tensor data (/proc/self/io).
// Run after `node scripts/bundle.mjs` (npm run bench does).
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeSparseCheckpoint } from '../test/support/sparse-checkpoint.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const fixtures = path.resolve(process.env.WEIGHT_SPEC_FIXTURES ?? path.join(root, '..', 'shared', 'fixtures'));
const configs = path.join(path.dirname(fixtures), 'configs');
const cli = path.join(root, 'dist', 'cli.js');
const TARGET = { seconds: 1, rssMb: 200, mib: 2 };
if (!existsSync(cli)) {
  console.error('deepseek-v3.bench: dist/cli.js missing; run `node scripts/bundle.mjs` first');
  process.exit(1);
}
const tmp = mkdtempSync(path.join(os.tmpdir(), 'ws-deepseek-bench-'));
let failed = false;
const haveTime = existsSync('/usr/bin/time');

/** Runs the CLI (under /usr/bin/time when present, and a /proc/self/io counter); wall s, peak RSS MB, bytes read. */
function cliRun(args) {
  const counter = path.join(tmp, 'rchar.cjs');
  writeFileSync(
    counter,
    `process.on('exit', () => { const m = /rchar: (\\d+)/.exec(require('fs').readFileSync('/proc/self/io', 'utf8')); process.stderr.write('RCHAR ' + (m ? m[1] : -1) + '\\n'); });\n`,
  );
  const node = [process.execPath, '-r', counter, cli, ...args];
  const t0 = process.hrtime.bigint();
  const r = haveTime
    ? spawnSync('/usr/bin/time', ['-f', 'RSSKB %M', ...node], { encoding: 'utf8', env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off' } })
    : spawnSync(node[0], node.slice(1), { encoding: 'utf8', env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off' } });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  if (r.status !== 0) throw new Error(`weight-spec ${args.join(' ')} failed (${r.status}): ${r.stderr.trim()}`);
  const rssMb = Number(/RSSKB (\d+)/.exec(r.stderr)?.[1] ?? NaN) / 1024;
  const rchar = Number(/RCHAR (-?\d+)/.exec(r.stderr)?.[1] ?? -1);
  return { seconds, rssMb, rchar };
}

// ---- export --config of the published configs, both cache forms
console.log('export --config (wall incl. node start-up; peak RSS of the CLI process)');
const base = cliRun(['--version']);
console.log(`  baseline (weight-spec --version): ${base.seconds.toFixed(3)} s, ${base.rssMb.toFixed(0)} MB RSS`);
for (const name of ['deepseek-v3', 'kimi-k2']) {
  const model = path.join(tmp, name);
  mkdirSync(model, { recursive: true });
  copyFileSync(path.join(configs, `${name}.json`), path.join(model, 'config.json'));
  for (const form of ['per-head', 'compressed']) {
    const out = path.join(tmp, `${name}-${form}`);
    const r = cliRun(['export', '--config', model, '--out', out, '--mla-cache', form]);
    const mib = statSync(path.join(out, 'model.onnx')).size / 2 ** 20;
    const rep = JSON.parse(readFileSync(path.join(out, 'export-report.json'), 'utf8'));
    const misses = [];
    if (r.seconds >= TARGET.seconds) misses.push(`wall ${r.seconds.toFixed(3)} s ≥ ${TARGET.seconds} s`);
    if (r.rssMb >= TARGET.rssMb) misses.push(`RSS ${r.rssMb.toFixed(0)} MB ≥ ${TARGET.rssMb} MB`);
    if (mib >= TARGET.mib) misses.push(`model.onnx ${mib.toFixed(2)} MiB ≥ ${TARGET.mib} MiB`);
    console.log(
      `  ${`${name} ${form}`.padEnd(24)} ${r.seconds.toFixed(3)} s  ${r.rssMb.toFixed(0)} MB RSS  model.onnx ${mib.toFixed(2)} MiB  ${rep.graph.nodes} nodes, ${rep.weights.count} weight inputs (plan ${rep.timings_ms.plan} ms, build ${rep.timings_ms.build} ms)` +
        (misses.length ? `  TARGET MISSED: ${misses.join('; ')}` : '  targets met'),
    );
    if (misses.length) failed = true;
  }
}

// ---- DeepSeek-V3's published FP8 layout, sparse, 163 shards
const cfg = JSON.parse(readFileSync(path.join(configs, 'deepseek-v3.json'), 'utf8'));
const H = cfg.hidden_size;
const nh = cfg.num_attention_heads;
const [bR, bC] = cfg.quantization_config.weight_block_size;
const cdiv = (a, b) => Math.ceil(a / b);
const tensors = [{ key: 'model.embed_tokens.weight', dtype: 'BF16', shape: [cfg.vocab_size, H] }];
const bf16 = (key, shape) => tensors.push({ key, dtype: 'BF16', shape });
const fp8 = (key, r, c) =>
  tensors.push(
    { key: `${key}.weight`, dtype: 'F8_E4M3', shape: [r, c] },
    { key: `${key}.weight_scale_inv`, dtype: 'F32', shape: [cdiv(r, bR), cdiv(c, bC)] },
  );
const qk = cfg.qk_nope_head_dim + cfg.qk_rope_head_dim;
const mlp = (p, inter) => {
  fp8(`${p}.down_proj`, H, inter);
  fp8(`${p}.gate_proj`, inter, H);
  fp8(`${p}.up_proj`, inter, H);
};
// layers 0 … 60 and the MTP layer 61 (num_nextn_predict_layers), in the released per-layer order
for (let l = 0; l <= cfg.num_hidden_layers; l++) {
  const p = `model.layers.${l}`;
  if (l === cfg.num_hidden_layers) {
    bf16(`${p}.embed_tokens.weight`, [cfg.vocab_size, H]);
    bf16(`${p}.enorm.weight`, [H]);
    bf16(`${p}.hnorm.weight`, [H]);
    fp8(`${p}.eh_proj`, H, 2 * H);
    bf16(`${p}.shared_head.norm.weight`, [H]);
    bf16(`${p}.shared_head.head.weight`, [cfg.vocab_size, H]);
  }
  bf16(`${p}.input_layernorm.weight`, [H]);
  if (l < cfg.first_k_dense_replace) mlp(`${p}.mlp`, cfg.intermediate_size);
  else {
    for (let e = 0; e < cfg.n_routed_experts; e++) mlp(`${p}.mlp.experts.${e}`, cfg.moe_intermediate_size);
    bf16(`${p}.mlp.gate.weight`, [cfg.n_routed_experts, H]);
    tensors.push({ key: `${p}.mlp.gate.e_score_correction_bias`, dtype: 'F32', shape: [cfg.n_routed_experts] });
    mlp(`${p}.mlp.shared_experts`, cfg.moe_intermediate_size * cfg.n_shared_experts);
  }
  bf16(`${p}.post_attention_layernorm.weight`, [H]);
  fp8(`${p}.self_attn.kv_a_proj_with_mqa`, cfg.kv_lora_rank + cfg.qk_rope_head_dim, H);
  bf16(`${p}.self_attn.kv_a_layernorm.weight`, [cfg.kv_lora_rank]);
  fp8(`${p}.self_attn.kv_b_proj`, nh * (cfg.qk_nope_head_dim + cfg.v_head_dim), cfg.kv_lora_rank);
  fp8(`${p}.self_attn.o_proj`, H, nh * cfg.v_head_dim);
  fp8(`${p}.self_attn.q_a_proj`, cfg.q_lora_rank, H);
  bf16(`${p}.self_attn.q_a_layernorm.weight`, [cfg.q_lora_rank]);
  fp8(`${p}.self_attn.q_b_proj`, nh * qk, cfg.q_lora_rank);
}
bf16('model.norm.weight', [H]);
bf16('lm_head.weight', [cfg.vocab_size, H]);

const src = path.join(tmp, 'DeepSeek-V3');
const t0 = performance.now();
const { totalBytes } = writeSparseCheckpoint(src, tensors, 163);
writeFileSync(path.join(src, 'config.json'), JSON.stringify(cfg, null, 2));
const genMs = performance.now() - t0;
const index = JSON.parse(readFileSync(path.join(src, 'model.safetensors.index.json'), 'utf8')).weight_map;
const split = Object.keys(index).filter((k) => k.endsWith('.weight_scale_inv') && index[k] !== index[k.replace(/_scale_inv$/, '')]).length;

const out = path.join(tmp, 'DeepSeek-V3-export');
const runs = [];
for (let round = 0; round < 3; round++) {
  rmSync(out, { recursive: true, force: true });
  runs.push(cliRun(['export', '--config', src, '--out', out, '--ctx-len', '4096']));
}
const spec = JSON.parse(readFileSync(path.join(out, 'weight_spec.json'), 'utf8'));
const report = JSON.parse(readFileSync(path.join(out, 'export-report.json'), 'utf8'));
const keys = spec.inputs.map((i) => i.location.key);
const check = (ok, msg) => {
  if (!ok) {
    console.error(`deepseek-v3.bench: ${msg}`);
    failed = true;
  }
};
check(!keys.concat(spec.inputs.map((i) => i.name)).some((k) => /scale_inv/.test(k)), 'a *_scale_inv became a graph input');
const moeLayers = new Set(keys.filter((k) => /\.mlp\.moe_weights\./.test(k)).map((k) => /layers\.(\d+)\./.exec(k)[1]));
check(moeLayers.size === cfg.num_hidden_layers - cfg.first_k_dense_replace, `stacked experts in ${moeLayers.size} layers`);
check(!keys.some((k) => k.startsWith(`model.layers.${cfg.num_hidden_layers}.`)), 'an MTP key is in the spec');
check(keys.includes('model.layers.0.self_attn.kv_a_proj_with_mqa.weight'), 'kv_a_proj_with_mqa is not an input');
const rchar = Math.max(...runs.map((r) => r.rchar));
if (rchar < 0) console.log('note: /proc/self/io unavailable; bytes read not measured');
else check(rchar < totalBytes / 1000, `the CLI read ${rchar} bytes of ${totalBytes}: not headers only`);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  `checkpoint: DeepSeek-V3 FP8 key set (${tensors.length} tensors, 61 layers + MTP, FP8 ${bR}×${bC} blocks), 163 sparse shards, ${(totalBytes / 1e9).toFixed(0)} GB of (never written) tensor data, ${split} weight/scale pairs split across shards, generated in ${genMs.toFixed(0)} ms`,
);
console.log(
  `export --config (prepare's plan from headers + graph): median ${median(runs.map((r) => r.seconds)).toFixed(3)} s, ${Math.max(...runs.map((r) => r.rssMb)).toFixed(0)} MB RSS (planner ${report.timings_ms.plan} ms, build ${report.timings_ms.build} ms in the last)`,
);
console.log(
  `planned: ${spec.inputs.length} weight inputs over ${spec.files.length} prepared files, ${moeLayers.size} stacked-expert layers, 0 scale inputs, MTP layer left out; bytes read by the CLI ${rchar >= 0 ? `${(rchar / 1e6).toFixed(1)} MB` : 'n/a'}`,
);
console.log(
  `load average ${os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')} (wall-time targets assume an idle machine)`,
);
rmSync(tmp, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
