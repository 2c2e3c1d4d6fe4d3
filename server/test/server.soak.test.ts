/**
 * Soak: the real language server (dist/server.js, spawned with --expose-gc) driven over real
 * JSON-RPC (vscode-jsonrpc on its stdio) through 2,000 operations on a 5,000-input spec —
 * edits, hovers/completions, close/reopen, file-change notifications, and a referenced
 * safetensors file that is broken and later repaired in the middle. Asserts: heap after the
 * run ≤ 1.5 × heap after the first 100 edits; no request slower than 1 s; diagnostics stay
 * right after the broken file (the server keeps working). Prints the numbers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from 'vscode-jsonrpc/node';
import { encodeModel, makeValueInfo } from '../../core/src/formats/onnx';
import { serializeSafetensors } from '../../core/src/formats/safetensors';
import { REPO_ROOT } from '../../test/support/fixtures';
import { tempDirs } from '../../test/support/temp';

const N_INPUTS = 5000;
const OPS = 2000;
const SERVER = path.join(REPO_ROOT, 'dist', 'server.js');

interface Diag {
  code?: string | number;
  severity?: number;
  message: string;
  range: { start: { line: number } };
}

const makeTmp = tempDirs('ws-soak-');
let tmp: string;
let child: ChildProcess;
let conn: MessageConnection;
const latest = new Map<string, { version?: number; diagnostics: Diag[] }>();

const key = (i: number) => `model.layers.${Math.floor(i / 10)}.w${i % 10}.weight`;

function specText(broken: Set<number>): string {
  const inputs = Array.from({ length: N_INPUTS }, (_, i) => ({
    location: { file: 0, key: broken.has(i) ? `${key(i)}_missing` : key(i) },
    name: key(i),
  }));
  return JSON.stringify(
    { files: [{ format: 'safetensors', path: 'prepared/base-0000.safetensors' }], inputs, model_name: 'soak', version: 5 },
    null,
    2,
  );
}

function heap(): Promise<number> {
  return new Promise((resolve) => {
    const on = (m: { type?: string; heapUsed?: number }) => {
      if (m?.type === 'heap') {
        child.off('message', on);
        resolve(m.heapUsed!);
      }
    };
    child.on('message', on);
    child.send({ type: 'heap' });
  });
}

/**
 * Waits until the latest diagnostics for `uri` satisfy `ok` (diagnostics are eventually
 * consistent: a server may publish intermediate versions first). Returns them.
 */
async function diagnosticsWhere(uri: string, ok: (d: Diag[]) => boolean, what: string, timeoutMs = 20_000): Promise<Diag[]> {
  const t0 = Date.now();
  for (;;) {
    const d = latest.get(uri);
    if (d && ok(d.diagnostics)) return d.diagnostics;
    if (Date.now() - t0 > timeoutMs) {
      throw new Error(`diagnostics never became ${what} within ${timeoutMs} ms; last: ${JSON.stringify(d?.diagnostics.slice(0, 3))}`);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}

const errorsOf = (d: Diag[]) => d.filter((x) => x.severity === 1);
const missingOf = (d: Diag[]) => d.filter((x) => x.code === 'key-missing').length;

beforeAll(async () => {
  if (!fs.existsSync(SERVER)) throw new Error(`${SERVER} missing: run node scripts/bundle.mjs first`);
  tmp = makeTmp();
  fs.mkdirSync(path.join(tmp, 'prepared'));
  const tensors = Array.from({ length: N_INPUTS }, (_, i) => ({ key: key(i), dtype: 'F32' as const, shape: [2], data: new Uint8Array(8) }));
  fs.writeFileSync(path.join(tmp, 'prepared', 'base-0000.safetensors'), serializeSafetensors(tensors));
  const model = {
    irVersion: 8,
    opsetImport: [{ domain: '', version: 18 }],
    graph: { name: 'soak', input: tensors.map((t) => makeValueInfo(t.key, 'F32', [2])), output: [], node: [], initializer: [] },
  };
  fs.writeFileSync(path.join(tmp, 'model.onnx'), encodeModel(model as never));
  fs.writeFileSync(path.join(tmp, 'weight_spec.json'), specText(new Set()));
  const preload = path.join(tmp, 'heap-probe.cjs');
  fs.writeFileSync(
    preload,
    `process.on('message', (m) => { if (m && m.type === 'heap') { global.gc(); global.gc(); process.send({ type: 'heap', heapUsed: process.memoryUsage().heapUsed }); } });\n`,
  );
  child = spawn(process.execPath, ['--expose-gc', '-r', preload, SERVER, '--stdio'], { stdio: ['pipe', 'pipe', 'pipe', 'ipc'] });
  child.stderr!.on('data', () => undefined);
  conn = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
  conn.onRequest((method: string, params: unknown) => {
    if (method === 'workspace/configuration') return ((params as { items: unknown[] }).items ?? []).map(() => null);
    return null;
  });
  conn.onNotification((method: string, params: unknown) => {
    if (method !== 'textDocument/publishDiagnostics') return;
    const p = params as { uri: string; version?: number; diagnostics: Diag[] };
    latest.set(p.uri, { version: p.version, diagnostics: p.diagnostics });
  });
  conn.listen();
  await conn.sendRequest('initialize', {
    processId: process.pid,
    rootUri: pathToFileURL(tmp).href,
    workspaceFolders: [{ uri: pathToFileURL(tmp).href, name: 'soak' }],
    capabilities: {
      workspace: { configuration: true, didChangeWatchedFiles: { dynamicRegistration: true }, workspaceFolders: true },
      textDocument: {
        publishDiagnostics: { versionSupport: true },
        hover: { contentFormat: ['markdown', 'plaintext'] },
        completion: { completionItem: { snippetSupport: true } },
      },
    },
  });
  await conn.sendNotification('initialized', {});
}, 60_000);

afterAll(() => {
  conn?.dispose();
  child?.kill('SIGKILL');
});

describe('language server soak', () => {
  it(`stays bounded and correct through ${OPS} operations on a ${N_INPUTS}-input spec`, async () => {
    const uri = pathToFileURL(path.join(tmp, 'weight_spec.json')).href;
    const shard = path.join(tmp, 'prepared', 'base-0000.safetensors');
    const shardUri = pathToFileURL(shard).href;
    const good = fs.readFileSync(shard);
    let version = 1;
    const broken = new Set<number>();
    let text = specText(broken);
    let open = true;
    await conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'weight-spec', version, text } });
    await diagnosticsWhere(uri, (d) => errorsOf(d).length === 0, 'error-free', 60_000);

    let seed = 12345;
    const rnd = (n: number) => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % n;
    const times: number[] = [];
    const slow: string[] = [];
    let opNow = 0;
    const timed = async (method: string, params: unknown) => {
      const t0 = performance.now();
      await conn.sendRequest(method, params);
      const ms = performance.now() - t0;
      times.push(ms);
      if (ms > 300) slow.push(`${method.split('/')[1]}@${opNow}:${ms.toFixed(0)}ms`);
    };
    const lineOfKey = (i: number) => 11 + 7 * i; // JSON.stringify indent 2: line of `"key": …` of input i
    let heapAt100 = 0;
    let shardBroken = false;
    let checks = 0;

    for (let op = 0; op < OPS; op++) {
      opNow = op;
      if (op === 100) heapAt100 = await heap();
      if (op === 700 || op === 900) {
        // A referenced file breaks (and is later repaired) mid-run.
        shardBroken = op === 700;
        fs.writeFileSync(shard, shardBroken ? Buffer.from('garbage, not a safetensors file') : good);
        await conn.sendNotification('workspace/didChangeWatchedFiles', { changes: [{ uri: shardUri, type: 2 }] });
      }
      const r = rnd(100);
      if (!open || r < 60) {
        const i = rnd(N_INPUTS);
        if (broken.has(i)) broken.delete(i);
        else if (broken.size < 20) broken.add(i);
        text = specText(broken);
        version++;
        if (!open) {
          await conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'weight-spec', version, text } });
          open = true;
        } else {
          await conn.sendNotification('textDocument/didChange', { textDocument: { uri, version }, contentChanges: [{ text }] });
        }
      } else if (r < 80) {
        const i = rnd(N_INPUTS);
        await timed('textDocument/hover', { textDocument: { uri }, position: { line: lineOfKey(i), character: 16 } });
      } else if (r < 90) {
        const i = rnd(N_INPUTS);
        await timed('textDocument/completion', { textDocument: { uri }, position: { line: lineOfKey(i), character: 16 } });
      } else if (r < 95) {
        await conn.sendNotification('workspace/didChangeWatchedFiles', { changes: [{ uri: shardUri, type: 2 }] });
      } else {
        await conn.sendNotification('textDocument/didClose', { textDocument: { uri } });
        open = false;
      }
      if (open && (op % 50 === 49 || op === 701 || op === 901)) {
        // Diagnostics must follow the latest text: one key-missing per broken key, or the
        // broken shard reported while it is broken — and recover once it is repaired.
        const n = broken.size;
        if (shardBroken)
          await diagnosticsWhere(uri, (d) => errorsOf(d).some((x) => x.code !== 'key-missing'), 'reporting the broken shard');
        else await diagnosticsWhere(uri, (d) => missingOf(d) === n && errorsOf(d).length === n, `exactly ${n} key-missing errors`);
        checks++;
      }
    }
    if (!open)
      await conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'weight-spec', version: version + 1, text } });
    await diagnosticsWhere(uri, (d) => missingOf(d) === broken.size, `exactly ${broken.size} key-missing errors at the end`);
    const heapEnd = await heap();
    const max = Math.max(...times);
    const sorted = [...times].sort((x, y) => x - y);
    const pct = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(0);
    const ratio = heapEnd / heapAt100;
    console.log(
      `[soak] ${OPS} ops, ${N_INPUTS} inputs, ${times.length} requests (p50 ${pct(0.5)} ms, p95 ${pct(0.95)} ms, p99 ${pct(0.99)} ms, max ${max.toFixed(0)} ms; >300 ms: ${slow.join(' ') || 'none'}), ` +
        `${checks} diagnostic checks; heap after 100 ops ${(heapAt100 / 2 ** 20).toFixed(1)} MiB, after run ${(heapEnd / 2 ** 20).toFixed(1)} MiB (×${ratio.toFixed(2)})`,
    );
    expect(max).toBeLessThan(1000);
    expect(ratio).toBeLessThanOrEqual(1.5);
  }, 600_000);
});
