// The language server's memory under many incremental edits (issue #14, point 3): a spec of
// `inputs` inputs over a real checkpoint and ONNX, then `edits` edits of different keys, sent
// as VS Code sends them (one incremental range per didChange, each waiting for the
// diagnostics of its version). The server (dist/server.js, spawned with --expose-gc) reports
// its RSS and heap after a full GC at edit 10 and at the end. Used by the CI soak
// (server/test/edit-memory.soak.test.ts, smaller spec) and by `npm run bench` (full size:
// 55,000 inputs ≈ 10 MB, 1,000 edits), which prints the figures. Run after `npm run build`.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const { createMessageConnection, StreamMessageReader, StreamMessageWriter } = require('vscode-jsonrpc/node');
const SERVER = path.join(root, 'dist', 'server.js');

const key = (i) => `model.layers.${Math.floor(i / 8)}.mlp.experts.proj_${i % 8}.weight`;

/** A safetensors file of tiny F32 tensors, written from the format's definition. */
function safetensors(keys) {
  const header = {};
  keys.forEach((k, j) => (header[k] = { dtype: 'F32', shape: [2], data_offsets: [j * 8, j * 8 + 8] }));
  let json = JSON.stringify(header);
  while ((8 + Buffer.byteLength(json)) % 8) json += ' ';
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  return Buffer.concat([len, Buffer.from(json), Buffer.alloc(keys.length * 8)]);
}

/** Varint / length-delimited protobuf writer, enough for a ModelProto with graph inputs. */
function field(no, bytes) {
  const out = [];
  let tag = (no << 3) | 2;
  while (tag > 0x7f) {
    out.push((tag & 0x7f) | 0x80);
    tag >>>= 7;
  }
  out.push(tag);
  let n = bytes.length;
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return Buffer.concat([Buffer.from(out), bytes]);
}
function varintField(no, v) {
  const out = [(no << 3) | 0];
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return Buffer.from(out);
}
function onnx(keys) {
  const dim = field(1, varintField(1, 2));
  const type = field(1, Buffer.concat([varintField(1, 1), field(2, dim)]));
  const inputs = keys.map((k) => field(11, Buffer.concat([field(1, Buffer.from(k)), field(2, type)])));
  const graph = field(7, Buffer.concat([field(2, Buffer.from('soak')), ...inputs]));
  return Buffer.concat([varintField(1, 8), graph, field(8, Buffer.concat([field(1, Buffer.from('')), varintField(2, 18)]))]);
}

/**
 * Runs the soak; resolves to `{ rssAt10, rssEnd, heapAt10, heapEnd, specBytes, ms }` (bytes).
 * `log` gets a progress line now and then; `snapshot` names a heap snapshot the server writes
 * at the end (how the retained document versions were found).
 */
export async function runEditSoak({ inputs = 55_000, edits = 1_000, log = () => undefined, snapshot } = {}) {
  if (!existsSync(SERVER)) throw new Error(`${SERVER} missing: run \`npm run build\` first`);
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'ws-edit-soak-'));
  const keys = Array.from({ length: inputs }, (_, i) => key(i));
  mkdirSync(path.join(tmp, 'prepared'));
  writeFileSync(path.join(tmp, 'prepared', 'base-0000.safetensors'), safetensors(keys));
  writeFileSync(path.join(tmp, 'model.onnx'), onnx(keys));
  const spec = {
    files: [{ format: 'safetensors', path: 'prepared/base-0000.safetensors' }],
    inputs: keys.map((k) => ({ location: { file: 0, key: k }, name: k })),
    model_name: 'soak',
    version: 5,
  };
  const text = JSON.stringify(spec, null, 2);
  const specFile = path.join(tmp, 'weight_spec.json');
  writeFileSync(specFile, text);
  const preload = path.join(tmp, 'probe.cjs');
  writeFileSync(
    preload,
    `process.on('message', (m) => {
  if (m && m.type === 'mem') { global.gc(); global.gc(); const u = process.memoryUsage(); process.send({ type: 'mem', rss: u.rss, heapUsed: u.heapUsed }); }
  if (m && m.type === 'snapshot') { global.gc(); process.send({ type: 'snapshot', file: require('v8').writeHeapSnapshot(m.file) }); }
});\n`,
  );
  const child = spawn(process.execPath, ['--expose-gc', '-r', preload, SERVER, '--stdio'], { stdio: ['pipe', 'pipe', 'pipe', 'ipc'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const ask = (type, extra = {}) =>
    new Promise((resolve, reject) => {
      const on = (m) => {
        if (m?.type === type) {
          child.off('message', on);
          resolve(m);
        }
      };
      child.on('message', on);
      exited.then((e) =>
        reject(new Error(`server exited (${JSON.stringify(e)}): ${stderr.split('\n').filter(Boolean).slice(-3).join(' | ')}`)),
      );
      child.send({ type, ...extra });
    });
  const conn = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  const waiters = new Map();
  conn.onNotification('textDocument/publishDiagnostics', (p) => {
    const w = waiters.get(p.version);
    if (w) {
      waiters.delete(p.version);
      w(p.diagnostics);
    }
  });
  conn.onRequest(() => null);
  conn.onNotification(() => undefined);
  conn.listen();
  const died = exited.then((e) => {
    throw new Error(`server exited (${JSON.stringify(e)}): ${stderr.split('\n').filter(Boolean).slice(-3).join(' | ')}`);
  });
  const diagnosticsOf = (version) => Promise.race([new Promise((resolve) => waiters.set(version, resolve)), died]);
  const t0 = Date.now();
  try {
    await conn.sendRequest('initialize', {
      processId: process.pid,
      rootUri: pathToFileURL(tmp).href,
      workspaceFolders: [{ uri: pathToFileURL(tmp).href, name: 'soak' }],
      capabilities: { textDocument: { publishDiagnostics: { versionSupport: true } } },
      initializationOptions: { debounceMs: 0 },
    });
    await conn.sendNotification('initialized', {});
    const uri = pathToFileURL(specFile).href;
    let version = 1;
    const first = diagnosticsOf(1);
    await conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'weight-spec', version, text } });
    await first;
    // JSON.stringify(…, 2) puts input i's "key" on line 11 + 7i, its value from character 16.
    const stride = 7919; // prime: `edits` different inputs, spread over the whole spec
    let mem10;
    for (let e = 1; e <= edits; e++) {
      const i = (e * stride) % inputs;
      const line = 11 + 7 * i;
      const character = 16 + key(i).length;
      version++;
      const got = diagnosticsOf(version);
      await conn.sendNotification('textDocument/didChange', {
        textDocument: { uri, version },
        contentChanges: [{ range: { start: { line, character }, end: { line, character } }, text: 'x' }],
      });
      await got;
      if (e === 10) mem10 = await ask('mem');
      if (e % 100 === 0) log(`edit ${e}/${edits}`);
    }
    const end = await ask('mem');
    if (snapshot) await ask('snapshot', { file: snapshot });
    return {
      rssAt10: mem10.rss,
      rssEnd: end.rss,
      heapAt10: mem10.heapUsed,
      heapEnd: end.heapUsed,
      specBytes: Buffer.byteLength(text),
      ms: Date.now() - t0,
    };
  } finally {
    conn.dispose();
    child.kill('SIGKILL');
    rmSync(tmp, { recursive: true, force: true });
  }
}

const mib = (b) => `${(b / 2 ** 20).toFixed(1)} MiB`;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const inputs = Number(process.env.SOAK_INPUTS ?? 55_000);
  const edits = Number(process.env.SOAK_EDITS ?? 1_000);
  const r = await runEditSoak({ inputs, edits, log: (l) => console.log(`lsp-edit-soak: ${l}`), snapshot: process.env.SOAK_SNAPSHOT });
  const ratio = r.rssEnd / r.rssAt10;
  console.log(`lsp-edit-soak: ${inputs} inputs (${mib(r.specBytes)} spec), ${edits} incremental edits in ${(r.ms / 1000).toFixed(1)} s`);
  console.log(
    `lsp-edit-soak: RSS after 10 edits ${mib(r.rssAt10)}, after ${edits} ${mib(r.rssEnd)} (×${ratio.toFixed(2)}, limit ×1.5); heap ${mib(r.heapAt10)} → ${mib(r.heapEnd)}`,
  );
  process.exit(ratio <= 1.5 ? 0 : 1);
}
