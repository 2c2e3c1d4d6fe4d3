// Benchmark: `weight-spec compile` (ort backend) and the ORT session it feeds.
// - incremental compile on real graphs (`export --config` of ../shared/configs/llama-3.1-8b.json,
//   291 weights, 29.9 GiB f32, and qwen3-30b-a3b.json, 579 weights, 114 GiB f32, bound from
//   sparse prepared shards whose headers are real and whose data is holes): second `compile`
//   with nothing changed vs the first, which binds and opens the model once in ORT (target
//   < 5 %; printed inside compile and as whole CLI runs, which include Node's start-up);
// - zero copy: the artifact's own size vs the weights (target ≤ 5 %);
// - session memory on a synthetic model with real random weights (Gather + Gemm chain,
//   378 MiB): anonymous RSS growth at session creation with ORT's defaults (the baseline,
//   measured in the same run) vs the runner's options (session-options.ts).
// Run after `node scripts/bundle.mjs`.
import { spawnSync } from 'node:child_process';
import {
  closeSync,
  copyFileSync,
  truncateSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
  writeSync,
  readFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cli = path.join(root, 'dist', 'cli.js');
if (!existsSync(cli)) {
  console.error('compile.bench: dist/cli.js missing; run `node scripts/bundle.mjs` first');
  process.exit(1);
}
const H = Number(process.env.BENCH_HIDDEN ?? 2048),
  V = Number(process.env.BENCH_VOCAB ?? 32000),
  L = Number(process.env.BENCH_LAYERS ?? 8);
const fixtures = path.resolve(process.env.WEIGHT_SPEC_FIXTURES ?? path.join(root, '..', 'shared', 'fixtures'));
const llamaConfig = path.join(path.dirname(fixtures), 'configs', 'llama-3.1-8b.json');
if (!existsSync(llamaConfig)) {
  console.error(`compile.bench: ${llamaConfig} missing (set WEIGHT_SPEC_FIXTURES)`);
  process.exit(1);
}
const tmp = mkdtempSync(path.join(os.tmpdir(), 'ws-compile-bench-'));
const exportDir = path.join(tmp, 'export'),
  // named and marked as QEfficient's prepare leaves a folder (see qeffSentinel)
  prepared = path.join(tmp, 'synthetic-qeff-prepared-float32');
mkdirSync(exportDir);
mkdirSync(prepared);

// --- protobuf writer (field numbers from onnx.proto) -----------------------------------
const enc = new TextEncoder();
const varint = (v) => {
  const o = [];
  while (v >= 0x80) {
    o.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  o.push(v);
  return o;
};
class W {
  parts = [];
  int(f, v) {
    this.parts.push(Uint8Array.from([...varint(f * 8), ...varint(v)]));
    return this;
  }
  bytes(f, b) {
    this.parts.push(Uint8Array.from([...varint(f * 8 + 2), ...varint(b.length)]), b);
    return this;
  }
  str(f, s) {
    return this.bytes(f, enc.encode(s));
  }
  done() {
    return Buffer.concat(this.parts);
  }
}
const vi = (name, elem, dims) => {
  const sh = new W();
  for (const d of dims) sh.bytes(1, typeof d === 'number' ? new W().int(1, d).done() : new W().str(2, d).done());
  return new W()
    .str(1, name)
    .bytes(2, new W().bytes(1, new W().int(1, elem).bytes(2, sh.done()).done()).done())
    .done();
};
const node = (op, ins, out, attrs = []) => {
  const n = new W();
  for (const i of ins) n.str(1, i);
  n.str(2, out).str(4, op);
  for (const [k, v] of attrs) {
    const a = new W().str(1, k);
    if (Array.isArray(v)) {
      for (const x of v) a.int(8, x);
      a.int(20, 7);
    } else a.int(3, v).int(20, 2);
    n.bytes(5, a.done());
  }
  return n.done();
};

// --- protobuf reader: graph inputs (name, elem type, dims) ---------------------------------
function fields(b, s, e) {
  const out = [];
  let p = s;
  const vr = () => {
    let r = 0,
      m = 1,
      x;
    do {
      x = b[p++];
      r += (x & 0x7f) * m;
      m *= 128;
    } while (x & 0x80);
    return r;
  };
  while (p < e) {
    const tag = vr(),
      f = Math.floor(tag / 8),
      w = tag & 7;
    let vs = p,
      ve,
      int;
    if (w === 0) {
      int = vr();
      ve = p;
    } else if (w === 2) {
      const n = vr();
      vs = p;
      ve = p + n;
      p = ve;
    } else if (w === 5) {
      ve = p += 4;
    } else {
      ve = p += 8;
    }
    out.push({ f, w, vs, ve, int });
  }
  return out;
}
function graphInputs(b) {
  const g = fields(b, 0, b.length).find((x) => x.f === 7);
  return fields(b, g.vs, g.ve)
    .filter((x) => x.f === 11)
    .map((x) => {
      let name = '',
        elem = 0;
      const dims = [];
      for (const y of fields(b, x.vs, x.ve)) {
        if (y.f === 1) name = Buffer.from(b.subarray(y.vs, y.ve)).toString();
        if (y.f === 2)
          for (const t of fields(b, y.vs, y.ve))
            if (t.f === 1)
              for (const tt of fields(b, t.vs, t.ve)) {
                if (tt.f === 1) elem = tt.int;
                if (tt.f === 2)
                  for (const d of fields(b, tt.vs, tt.ve))
                    for (const dv of fields(b, d.vs, d.ve))
                      if (dv.f === 1) dims.push(dv.int);
                      else if (dv.f === 2) dims.push('?');
              }
      }
      return { name, elem, dims };
    });
}
function stHeader(hdr) {
  let h = Buffer.from(JSON.stringify(hdr));
  h = Buffer.concat([h, Buffer.alloc((8 - (h.length % 8)) % 8, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(h.length));
  return Buffer.concat([len, h]);
}

/**
 * Marks `dir` as QEfficient marks a folder its prepare made: the `.checkpoint_prepared`
 * sentinel and no manifest, in a folder named `*-qeff-prepared-<dtype>`. compile binds only
 * folders a prepare made (docs/SAFETY.md); the bench's shards stand for a checkpoint prepared
 * elsewhere, which compile accepts as it is.
 */
function qeffSentinel(dir) {
  writeFileSync(path.join(dir, '.checkpoint_prepared'), '');
}

// --- real graphs (Llama-3.1-8B, Qwen3-30B-A3B), sparse prepared shards ------------------------
/** Exports `configFile` and writes sparse prepared shards (real headers, data as holes) where its spec points. */
function bigExportOf(configFile, name) {
  const model = path.join(tmp, name);
  mkdirSync(model);
  copyFileSync(configFile, path.join(model, 'config.json'));
  const out = path.join(tmp, `${name}-export`);
  const ex = spawnSync(process.execPath, [cli, 'export', '--config', model, '--out', out, '--ctx-len', '128'], { encoding: 'utf8' });
  if (ex.status !== 0) {
    console.error(`compile.bench: export of ${name} failed: ${ex.stderr.trim()}`);
    process.exit(1);
  }
  const spec = JSON.parse(readFileSync(path.join(out, 'weight_spec.json'), 'utf8'));
  const inputsByName = new Map(graphInputs(readFileSync(path.join(out, 'model.onnx'))).map((i) => [i.name, i]));
  let weights = 0;
  mkdirSync(spec.model_id, { recursive: true });
  spec.files.forEach((f, fi) => {
    const hdr = {};
    let o = 0;
    for (const inp of spec.inputs.filter((i) => i.location.file === fi)) {
      if (hdr[inp.location.key]) continue;
      const gi = inputsByName.get(inp.name);
      const n = gi.dims.reduce((a, b) => a * b, 1) * (gi.elem === 1 ? 4 : 2);
      hdr[inp.location.key] = { dtype: gi.elem === 1 ? 'F32' : 'F16', shape: gi.dims, data_offsets: [o, o + n] };
      o += n;
    }
    const file = path.join(spec.model_id, path.basename(f.path));
    const head = stHeader(hdr);
    writeFileSync(file, head);
    truncateSync(file, head.length + o);
    weights += o;
  });
  qeffSentinel(spec.model_id);
  return { dir: out, inputs: spec.inputs.length, weights };
}
const bigModels = [
  { label: 'Llama-3.1-8B', ...bigExportOf(llamaConfig, 'llama-3.1-8b') },
  { label: 'Qwen3-30B-A3B', ...bigExportOf(path.join(path.dirname(llamaConfig), 'qwen3-30b-a3b.json'), 'qwen3-30b-a3b') },
];

// --- the synthetic export (real random weights) ---------------------------------------------
const tensors = [{ key: 'model.embed.weight', shape: [V, H] }];
for (let i = 0; i < L; i++) tensors.push({ key: `model.layers.${i}.proj.weight`, shape: [H, H] });
let off = 0;
const header = {};
for (const t of tensors) {
  t.n = t.shape[0] * t.shape[1] * 4;
  header[t.key] = { dtype: 'F32', shape: t.shape, data_offsets: [off, off + t.n] };
  off += t.n;
}
const weightBytes = off;
let h = Buffer.from(JSON.stringify(header));
h = Buffer.concat([h, Buffer.alloc((8 - (h.length % 8)) % 8, 0x20)]);
const fd = openSync(path.join(prepared, 'base-0000.safetensors'), 'w');
const len = Buffer.alloc(8);
len.writeBigUInt64LE(BigInt(h.length));
writeSync(fd, len);
writeSync(fd, h);
const chunk = new Float32Array(1 << 20);
for (let i = 0; i < chunk.length; i++) chunk[i] = (Math.random() - 0.5) * 0.05;
for (const t of tensors) {
  let left = t.n;
  while (left > 0) {
    const k = Math.min(left, chunk.byteLength);
    writeSync(fd, Buffer.from(chunk.buffer, 0, k));
    left -= k;
  }
}
closeSync(fd);
qeffSentinel(prepared);
const g = new W();
g.bytes(1, node('Gather', ['model.embed.weight', 'input_ids'], 'e'));
g.bytes(1, node('Flatten', ['e'], 'x0', [['axis', 2]]));
for (let i = 0; i < L; i++) g.bytes(1, node('Gemm', [`x${i}`, `model.layers.${i}.proj.weight`], `x${i + 1}`, [['transB', 1]]));
g.bytes(1, node('Unsqueeze', [`x${L}`], 'logits', [['axes', [0]]]));
g.str(2, 'bench').bytes(11, vi('input_ids', 7, [1, 'seq']));
for (const t of tensors) g.bytes(11, vi(t.key, 1, t.shape));
g.bytes(12, vi('logits', 1, [1, 'seq', H]));
writeFileSync(
  path.join(exportDir, 'model.onnx'),
  new W().int(1, 7).bytes(8, new W().str(1, '').int(2, 11).done()).bytes(7, g.done()).done(),
);
symlinkSync(prepared, path.join(exportDir, 'prepared'));
const spec = {
  files: [{ format: 'safetensors', path: 'prepared/base-0000.safetensors' }],
  inputs: tensors.map((t) => ({ location: { file: 0, key: t.key }, name: t.key })),
  model_id: prepared,
  model_name: 'bench',
  version: 5,
};
writeFileSync(path.join(exportDir, 'weight_spec.json'), JSON.stringify(spec, null, 2));

// --- compile twice ----------------------------------------------------------------------------
function timed(args) {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) {
    console.error(`compile.bench: ${args.join(' ')} failed: ${r.stderr.trim()}`);
    process.exit(1);
  }
  const inner = Number((r.stdout.match(/([\d.]+) ms\)?:?/) ?? [])[1]);
  return { ms, inner, out: r.stdout.trim() };
}
const baseline = timed(['--version']); // Node + bundle start-up, same run
for (const m of bigModels) {
  m.first = timed(['compile', m.dir]);
  m.second = timed(['compile', m.dir]);
  if (!/up to date/.test(m.second.out)) {
    console.error(`compile.bench: second compile of ${m.label} did not skip: ${m.second.out}`);
    process.exit(1);
  }
  m.artifact = statSync(JSON.parse(readFileSync(path.join(m.dir, 'compile.json'), 'utf8')).artifacts.model).size;
}
timed(['compile', exportDir]);
const rec = JSON.parse(readFileSync(path.join(exportDir, 'compile.json'), 'utf8'));

// --- session memory: ORT defaults (baseline) vs the runner's options ---------------------------
const probe = `
const ort = require(${JSON.stringify(path.join(root, 'node_modules', 'onnxruntime-node'))});
const fs = require('fs');
const st = () => { const s = fs.readFileSync('/proc/self/status', 'utf8'); const g = (k) => +s.match(new RegExp(k + ':\\\\s+(\\\\d+)'))[1] / 1024; return { anon: g('RssAnon'), hwm: g('VmHWM') }; };
(async () => { const opts = JSON.parse(process.argv[2]); const b = st(); const t0 = Date.now();
  const s = await ort.InferenceSession.create(${JSON.stringify(rec.artifacts.model)}, opts); const ms = Date.now() - t0;
  await s.run({ input_ids: new ort.Tensor('int64', BigInt64Array.from([1n, 2n, 3n]), [1, 3]) }); const a = st();
  console.log(JSON.stringify({ ms, anon: a.anon - b.anon, peak: a.hwm - b.hwm })); })();`;
const probeFile = path.join(tmp, 'probe.cjs');
writeFileSync(probeFile, probe);
const mem = (opts) => JSON.parse(spawnSync(process.execPath, [probeFile, JSON.stringify(opts)], { encoding: 'utf8' }).stdout.trim());
const ortDefault = mem({});
const mib = (n) => (n / 2 ** 20).toFixed(1);
const ours = mem({ enableMemPattern: false, extra: { session: { disable_prepacking: '1' } } });

console.log(`compile.bench: start-up baseline (--version) ${baseline.ms.toFixed(0)} ms`);
for (const m of bigModels) {
  m.innerRatio = m.second.inner / m.first.inner;
  console.log(`${m.label} graph, ${m.inputs} weights, ${(m.weights / 2 ** 30).toFixed(1)} GiB f32 (sparse shards):`);
  console.log(`  first compile                   ${m.first.ms.toFixed(0)} ms wall (${m.first.inner} ms in compile, incl. ORT load check)`);
  console.log(`  second compile (nothing changed) ${m.second.ms.toFixed(0)} ms wall (${m.second.inner} ms in compile)`);
  console.log(
    `  second/first                    ${(100 * m.innerRatio).toFixed(1)} % in compile, ${((100 * m.second.ms) / m.first.ms).toFixed(1)} % wall incl. start-up (target < 5 %)`,
  );
  console.log(
    `  artifact / weights              ${mib(m.artifact)} MiB / ${mib(m.weights)} MiB = ${((100 * m.artifact) / m.weights).toFixed(4)} % (target ≤ 5 %)`,
  );
}
console.log(`synthetic model, ${L + 1} weights, ${mib(weightBytes)} MiB f32 (real data):`);
console.log(
  `  session, ORT defaults (baseline) create ${ortDefault.ms} ms, anon RSS +${ortDefault.anon.toFixed(0)} MiB, peak +${ortDefault.peak.toFixed(0)} MiB`,
);
console.log(
  `  session, runner options          create ${ours.ms} ms, anon RSS +${ours.anon.toFixed(0)} MiB, peak +${ours.peak.toFixed(0)} MiB (weights ${mib(weightBytes)} MiB stay file-backed)`,
);
rmSync(tmp, { recursive: true, force: true });
const ok = bigModels.every((m) => m.innerRatio < 0.05 && m.artifact <= 0.05 * m.weights);
if (!ok) {
  console.error('compile.bench: a target was missed');
  process.exit(1);
}
