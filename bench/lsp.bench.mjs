// Benchmark: the language server (dist/server.js --stdio, real JSON-RPC) on a generated spec
// with 20,000 inputs over a 20,000-key checkpoint in 4 shards. Targets (issue 7): diagnostics
// < 300 ms cold (didOpen → publishDiagnostics of a fresh server) and < 50 ms after a one-key
// edit (incremental didChange → publishDiagnostics). The baseline, measured in the same run, is
// the same edit made as a structural change (forces a full re-parse + re-check).
// Debounce is 0 (initializationOptions.debounceMs) so the numbers are the server's own latency.
// Run after `node scripts/bundle.mjs`.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const { createMessageConnection, StreamMessageReader, StreamMessageWriter } = require('vscode-jsonrpc/node');
const server = path.join(root, 'dist', 'server.js');
const N = 20_000;
const SHARDS = 4;
const TARGET = { coldMs: 300, editMs: 50 };
if (!existsSync(server)) { console.error('lsp.bench: dist/server.js missing; run `node scripts/bundle.mjs` first'); process.exit(1); }

const key = (i) => `model.layers.${Math.floor(i / 10)}.mlp.proj_${i % 10}.weight`;

/** A safetensors file of tiny F32 tensors, written from the format's definition. */
function safetensors(keys) {
  const header = {};
  keys.forEach((k, j) => (header[k] = { dtype: 'F32', shape: [2], data_offsets: [j * 8, j * 8 + 8] }));
  let json = JSON.stringify(header);
  while ((8 + Buffer.byteLength(json)) % 8 !== 0) json += ' ';
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  return Buffer.concat([len, Buffer.from(json), Buffer.alloc(keys.length * 8)]);
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'ws-lsp-bench-'));
mkdirSync(path.join(tmp, 'ckpt'));
const files = [];
const inputs = [];
for (let s = 0; s < SHARDS; s++) {
  const keys = [];
  for (let i = s; i < N; i += SHARDS) {
    keys.push(key(i));
    inputs.push({ location: { file: s, key: key(i) }, name: key(i) });
  }
  const name = `model-${String(s + 1).padStart(5, '0')}-of-${String(SHARDS).padStart(5, '0')}.safetensors`;
  writeFileSync(path.join(tmp, 'ckpt', name), safetensors(keys));
  files.push({ format: 'safetensors', path: `ckpt/${name}` });
}
const specFile = path.join(tmp, 'weight_spec.json');
const text = JSON.stringify({ files, inputs, model_name: 'bench', version: 5 }, null, 2);
writeFileSync(specFile, text);
const uri = pathToFileURL(specFile).href;

function positionOf(t, offset) {
  let line = 0;
  let start = 0;
  for (let i = t.indexOf('\n'); i !== -1 && i < offset; i = t.indexOf('\n', i + 1)) { line++; start = i + 1; }
  return { line, character: offset - start };
}

async function startServer() {
  const child = spawn(process.execPath, [server, '--stdio'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const conn = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  const waiters = [];
  conn.onNotification('textDocument/publishDiagnostics', (p) => {
    for (const w of waiters.splice(0)) if (w.version === p.version) w.resolve(p.diagnostics); else waiters.push(w);
  });
  conn.onRequest(() => null);
  conn.listen();
  await conn.sendRequest('initialize', { processId: process.pid, rootUri: pathToFileURL(tmp).href, capabilities: {}, initializationOptions: { debounceMs: 0 } });
  await conn.sendNotification('initialized', {});
  const wait = (version) => new Promise((resolve) => waiters.push({ version, resolve }));
  return { child, conn, wait };
}

const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const colds = [];
let srv;
for (let run = 0; run < 3; run++) {
  srv?.conn.dispose();
  srv?.child.kill();
  srv = await startServer();
  const t0 = process.hrtime.bigint();
  const p = srv.wait(1);
  await srv.conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'weight-spec', version: 1, text } });
  const d = await p;
  colds.push(ms(t0));
  if (d.length !== 0) { console.error(`lsp.bench: expected no diagnostics on open, got ${d.length}: ${d[0].message}`); process.exit(1); }
}

// One-key edits: insert a character into a key in the middle of the document, then remove it.
let cur = text;
let version = 1;
const at = cur.indexOf(`"key": "${key(N / 2)}"`) + 8;
async function edit(start, end, newText) {
  const range = { start: positionOf(cur, start), end: positionOf(cur, end) };
  cur = cur.slice(0, start) + newText + cur.slice(end);
  version++;
  const p = srv.wait(version);
  const t0 = process.hrtime.bigint();
  await srv.conn.sendNotification('textDocument/didChange', { textDocument: { uri, version }, contentChanges: [{ range, text: newText }] });
  const d = await p;
  return { ms: ms(t0), d };
}
const edits = [];
for (let k = 0; k < 20; k++) {
  const r = k % 2 === 0 ? await edit(at, at, 'x') : await edit(at, at + 1, '');
  const want = k % 2 === 0 ? 1 : 0;
  if (r.d.length !== want) { console.error(`lsp.bench: edit ${k}: expected ${want} diagnostics, got ${r.d.length}`); process.exit(1); }
  edits.push(r.ms);
}
// Baseline: the same kind of edit next to a key but outside the string (whitespace), which
// the incremental path cannot patch: a full parse and check of the 20,000 inputs.
const full = [];
for (let k = 0; k < 6; k++) {
  const r = k % 2 === 0 ? await edit(at - 1, at - 1, ' ') : await edit(at - 1, at, '');
  full.push(r.ms);
}
srv.conn.dispose();
srv.child.kill();
rmSync(tmp, { recursive: true, force: true });

const cold = median(colds);
const e = median(edits);
const f = median(full);
console.log(`lsp: ${N} inputs over ${N} keys in ${SHARDS} shards (${(text.length / 2 ** 20).toFixed(1)} MiB spec), debounce 0`);
console.log(`  cold open → diagnostics: median ${cold.toFixed(0)} ms of ${colds.map((x) => x.toFixed(0)).join('/')} (target < ${TARGET.coldMs} ms) ${cold < TARGET.coldMs ? 'OK' : 'MISSED'}`);
console.log(`  one-key edit → diagnostics: median ${e.toFixed(1)} ms, max ${Math.max(...edits).toFixed(1)} ms over ${edits.length} edits (target < ${TARGET.editMs} ms) ${e < TARGET.editMs ? 'OK' : 'MISSED'}`);
console.log(`  baseline full re-check after a structural edit: median ${f.toFixed(0)} ms → incremental is ${(f / e).toFixed(1)}× faster`);
if (cold >= TARGET.coldMs || e >= TARGET.editMs) process.exitCode = 1;
