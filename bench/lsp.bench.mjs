// Benchmark (issue 22): the language server (dist/server.js --stdio, real JSON-RPC) against VS
// Code's own JSON language service (vscode-json-languageservice, the pinned dev dependency)
// validating the same spec against the JSON schema of the weight_spec format (the build's
// dist/weight-spec.schema.json, generated from core's zod schema), measured in the same run.
// The server also checks every key against the checkpoint headers (8 shards); the JSON service
// does syntax and schema only.
// Figures (medians over alternating runs, each cold run a fresh process):
// - cold open → diagnostics (didOpen → publishDiagnostics) vs the JSON service's first
//   validation, at 5k, 20k and 80k inputs: target ≤ 0.5×;
// - one-key edit as VS Code sends it (incremental range change) → new diagnostics, debounce 0,
//   vs the JSON service's re-validation after the same edit (20k inputs): target ≤ 0.1×;
// - hover and completion p95 on the 20k spec: target ≤ 20 ms;
// - server heap for the 20k spec (after a full GC, minus the heap before didOpen): ≤ 3× the spec's size.
// Installs nothing; exits 1 when a target is missed. Run after `node scripts/bundle.mjs`.
// Env: WS_LSP_BENCH_SIZES (5000,20000,80000), WS_LSP_BENCH_RUNS (3), WS_LSP_BENCH_NODE_ARGS (server node options).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const require = createRequire(import.meta.url);
const { createMessageConnection, StreamMessageReader, StreamMessageWriter } = require('vscode-jsonrpc/node');
const server = path.join(root, 'dist', 'server.js');
const SIZES = (process.env.WS_LSP_BENCH_SIZES ?? '5000,20000,80000').split(',').map(Number);
const MAIN = SIZES.includes(20_000) ? 20_000 : SIZES[0];
const RUNS = Math.max(1, Number(process.env.WS_LSP_BENCH_RUNS ?? 3));
const SHARDS = 8;
/** What VS Code declares that changes the server's answers here: completion lists with a shared edit range. */
const VSCODE_CAPABILITIES = {
  textDocument: {
    completion: { completionList: { itemDefaults: ['commitCharacters', 'editRange', 'insertTextFormat', 'insertTextMode', 'data'] } },
  },
};
/** Extra node options of the server (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it). */
const NODE_ARGS = (process.env.WS_LSP_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const EDITS = 20;
const TARGET = { cold: 0.5, edit: 0.1, p95Ms: 20, heap: 3 };
if (!existsSync(server) || !existsSync(path.join(root, 'dist', 'weight-spec.schema.json'))) {
  console.error('lsp.bench: dist/server.js or dist/weight-spec.schema.json missing; run `node scripts/bundle.mjs` first');
  process.exit(1);
}
const tmp = mkdtempSync(path.join(os.tmpdir(), 'ws-lsp-bench-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

// ---- the JSON schema of the format: the one the build generates from core's zod schema
// (core/src/spec/json-schema.ts → dist/weight-spec.schema.json, contributed as jsonValidation)
const schemaFile = path.join(root, 'dist', 'weight-spec.schema.json');

// ---- a spec of n inputs over a checkpoint of n keys in 8 shards
const key = (i) => `model.layers.${Math.floor(i / 10)}.mlp.proj_${i % 10}.weight`;
function safetensors(keys) {
  const header = {};
  keys.forEach((k, j) => (header[k] = { dtype: 'F32', shape: [2], data_offsets: [j * 8, j * 8 + 8] }));
  let json = JSON.stringify(header);
  while ((8 + Buffer.byteLength(json)) % 8 !== 0) json += ' ';
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  return Buffer.concat([len, Buffer.from(json), Buffer.alloc(keys.length * 8)]);
}
function makeSpec(n) {
  const dir = path.join(tmp, `n${n}`);
  mkdirSync(path.join(dir, 'ckpt'), { recursive: true });
  const files = [];
  const inputs = [];
  for (let s = 0; s < SHARDS; s++) {
    const keys = [];
    for (let i = s; i < n; i += SHARDS) {
      keys.push(key(i));
      inputs.push({ location: { file: s, key: key(i) }, name: key(i) });
    }
    const name = `model-${String(s + 1).padStart(5, '0')}-of-${String(SHARDS).padStart(5, '0')}.safetensors`;
    writeFileSync(path.join(dir, 'ckpt', name), safetensors(keys));
    files.push({ format: 'safetensors', path: `ckpt/${name}` });
  }
  const file = path.join(dir, 'weight_spec.json');
  const text = JSON.stringify({ files, inputs, model_name: 'bench', version: 5 }, null, 2);
  writeFileSync(file, text);
  // the edit point: inside the key string of the middle input
  return { n, dir, file, text, uri: pathToFileURL(file).href, at: text.indexOf(`"key": "${key(n >> 1)}"`) + 8 };
}

/** Line/character of every offset, from a line-start table. */
function positions(text) {
  const starts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return (offset) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo, character: offset - starts[lo] };
  };
}

const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p95 = (xs) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(xs.length * 0.95) - 1)];

function jsonService(spec, edits) {
  const r = spawnSync(
    process.execPath,
    [path.join(here, 'json-service-child.mjs'), schemaFile, spec.file, String(spec.at), String(edits)],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) {
    console.error(`lsp.bench: the JSON service failed: ${r.stderr.trim()}`);
    process.exit(1);
  }
  const res = JSON.parse(r.stdout);
  if (res.diagnostics !== 0) {
    console.error(
      `lsp.bench: the JSON service reports ${res.diagnostics} problems on the valid spec (${res.firstMessage}); the schema does not fit`,
    );
    process.exit(1);
  }
  return res;
}

const preload = path.join(tmp, 'heap-probe.cjs');
writeFileSync(
  preload,
  "process.on('message', (m) => { if (m === 'heap') { global.gc(); global.gc(); process.send({ heap: process.memoryUsage().heapUsed }); } });\n",
);
async function startServer(spec) {
  const child = spawn(process.execPath, ['--expose-gc', ...NODE_ARGS, '-r', preload, server, '--stdio'], {
    stdio: ['pipe', 'pipe', 'inherit', 'ipc'],
  });
  const conn = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  const waiters = [];
  conn.onNotification('textDocument/publishDiagnostics', (p) => {
    for (const w of waiters.splice(0))
      if (w.version === p.version) w.resolve(p.diagnostics);
      else waiters.push(w);
  });
  conn.onRequest(() => null);
  conn.listen();
  await conn.sendRequest('initialize', {
    processId: process.pid,
    rootUri: pathToFileURL(spec.dir).href,
    capabilities: VSCODE_CAPABILITIES,
    initializationOptions: { debounceMs: 0 },
  });
  await conn.sendNotification('initialized', {});
  const heap = () =>
    new Promise((resolve) => {
      child.once('message', (m) => resolve(m.heap));
      child.send('heap');
    });
  // shutdown + exit as a client does (a profiled server writes its profile on exit)
  const stop = async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    await conn.sendRequest('shutdown').catch(() => undefined);
    await conn.sendNotification('exit').catch(() => undefined);
    const timer = setTimeout(() => child.kill(), 5000);
    await exited;
    clearTimeout(timer);
    conn.dispose();
  };
  return { conn, heap, stop, wait: (version) => new Promise((resolve) => waiters.push({ version, resolve })) };
}
async function openCold(srv, spec) {
  const p = srv.wait(1);
  const t0 = process.hrtime.bigint();
  await srv.conn.sendNotification('textDocument/didOpen', {
    textDocument: { uri: spec.uri, languageId: 'weight-spec', version: 1, text: spec.text },
  });
  const d = await p;
  const t = ms(t0);
  if (d.length !== 0) {
    console.error(`lsp.bench: expected no diagnostics on open, got ${d.length}: ${d[0].message}`);
    process.exit(1);
  }
  return t;
}

console.log(
  `lsp bench: load average ${os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')} on ${os.availableParallelism?.() ?? os.cpus().length} cores; ${RUNS} alternating runs per size; debounce 0`,
);
let ok = true;
const curve = [];
let main;
for (const n of SIZES) {
  const spec = makeSpec(n);
  const json = [];
  const ours = [];
  for (let r = 0; r < RUNS; r++) {
    json.push(jsonService(spec, 0).cold);
    const srv = await startServer(spec);
    ours.push(await openCold(srv, spec));
    await srv.stop();
  }
  const ratio = median(ours) / median(json);
  curve.push({ n, bytes: spec.text.length, ours: median(ours), json: median(json), ratio, oursRuns: ours, jsonRuns: json });
  if (n === MAIN) main = spec;
  else rmSync(spec.dir, { recursive: true, force: true });
}
console.log(
  '\ncold open → diagnostics (server: fresh process, didOpen → publishDiagnostics; JSON service: fresh process, first validation)',
);
console.log('  inputs   spec      server (runs)                 JSON service (runs)           ratio');
for (const c of curve) {
  const runs = (xs) => xs.map((x) => x.toFixed(0)).join('/');
  console.log(
    `  ${String(c.n).padStart(6)}  ${(c.bytes / 2 ** 20).toFixed(1).padStart(4)} MiB  ${c.ours.toFixed(0).padStart(5)} ms (${runs(c.oursRuns)})`.padEnd(
      56,
    ) +
      `${c.json.toFixed(0).padStart(5)} ms (${runs(c.jsonRuns)})`.padEnd(30) +
      `${c.ratio.toFixed(2)}× ${c.ratio <= TARGET.cold ? 'OK' : 'MISSED'} (target ≤ ${TARGET.cold})`,
  );
  if (c.ratio > TARGET.cold) ok = false;
}

// ---- at 20k: one-key edits, hover/completion latency, heap
const spec = main;
const json = jsonService(spec, EDITS);
const srv = await startServer(spec);
const heapBefore = await srv.heap();
await openCold(srv, spec);
let cur = spec.text;
let version = 1;
const edits = [];
for (let k = 0; k < EDITS; k++) {
  const pos = positions(cur);
  const [start, end, newText] = k % 2 === 0 ? [spec.at, spec.at, 'x'] : [spec.at, spec.at + 1, ''];
  const range = { start: pos(start), end: pos(end) };
  cur = cur.slice(0, start) + newText + cur.slice(end);
  version++;
  const p = srv.wait(version);
  const t0 = process.hrtime.bigint();
  await srv.conn.sendNotification('textDocument/didChange', {
    textDocument: { uri: spec.uri, version },
    contentChanges: [{ range, text: newText }],
  });
  const d = await p;
  edits.push(ms(t0));
  const want = k % 2 === 0 ? 1 : 0;
  if (d.length !== want) {
    console.error(`lsp.bench: edit ${k}: expected ${want} diagnostics, got ${d.length}`);
    process.exit(1);
  }
}
const heap = (await srv.heap()) - heapBefore;
const pos = positions(cur);
const hovers = [];
const completions = [];
for (let k = 0; k < 100; k++) {
  const i = Math.floor((((k * 7919) % 1000) / 1000) * spec.n);
  const at = cur.indexOf(`"key": "${key(i)}"`) + 12;
  let t0 = process.hrtime.bigint();
  const h = await srv.conn.sendRequest('textDocument/hover', { textDocument: { uri: spec.uri }, position: pos(at) });
  hovers.push(ms(t0));
  if (!h) {
    console.error(`lsp.bench: no hover on the key of input ${i}`);
    process.exit(1);
  }
  t0 = process.hrtime.bigint();
  const c = await srv.conn.sendRequest('textDocument/completion', { textDocument: { uri: spec.uri }, position: pos(at) });
  completions.push(ms(t0));
  if (!c || (Array.isArray(c) ? c : c.items).length === 0) {
    console.error(`lsp.bench: no completion inside the key of input ${i}`);
    process.exit(1);
  }
}
await srv.stop();

const e = median(edits);
const je = median(json.edits);
const editRatio = e / je;
const hp = p95(hovers);
const cp = p95(completions);
const heapRatio = heap / spec.text.length;
console.log(`\none-key edit → diagnostics at ${spec.n} inputs (incremental didChange, debounce 0)`);
console.log(
  `  server: median ${e.toFixed(1)} ms (max ${Math.max(...edits).toFixed(1)}) over ${edits.length} edits; JSON service re-validation: median ${je.toFixed(1)} ms (max ${Math.max(...json.edits).toFixed(1)})`,
);
console.log(`  ratio ${editRatio.toFixed(3)}× (target ≤ ${TARGET.edit}) ${editRatio <= TARGET.edit ? 'OK' : 'MISSED'}`);
console.log(
  `hover p95 ${hp.toFixed(1)} ms, completion p95 ${cp.toFixed(1)} ms over 100 requests each (target ≤ ${TARGET.p95Ms} ms) ${hp <= TARGET.p95Ms && cp <= TARGET.p95Ms ? 'OK' : 'MISSED'}`,
);
console.log(
  `server heap for the ${(spec.text.length / 2 ** 20).toFixed(1)} MiB spec: ${(heap / 2 ** 20).toFixed(1)} MiB = ${heapRatio.toFixed(2)}× its size (after GC, over the ${(heapBefore / 2 ** 20).toFixed(1)} MiB before didOpen; target ≤ ${TARGET.heap}×) ${heapRatio <= TARGET.heap ? 'OK' : 'MISSED'}`,
);
if (editRatio > TARGET.edit || hp > TARGET.p95Ms || cp > TARGET.p95Ms || heapRatio > TARGET.heap) ok = false;
process.exit(ok ? 0 : 1);
