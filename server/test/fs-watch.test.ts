// The server's own file watching (server/src/fs-watch.ts) for a client that cannot watch
// (no dynamic didChangeWatchedFiles, as Neovim 0.7): real files renamed, rewritten and
// linked in a temp workspace, and the diagnostics that follow without any edit or client
// notification. The prepare-written-elsewhere case is in commands.test.ts.
import fs, { mkdirSync, renameSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { Diagnostic } from 'vscode-languageserver-protocol';
import { ELEM, onnxBytes, writeTensors } from '../../core/test/support/check-helpers';
import { FsWatchers, missedByClient, watchTargets } from '../src/fs-watch';
import { startInMemory, type TestClient } from './harness';
import { tempDirs } from '../../test/support/temp';
import { makeWorkspace, preparedCopy } from './workspace';

const tmp = tempDirs('ws-lsp-fswatch-');
const clients: TestClient[] = [];
afterEach(() => {
  for (const c of clients.splice(0)) c.close();
});

/** A client that declares no dynamic file watching, with a short watch debounce. */
async function noWatchClient(debounce = 50): Promise<TestClient> {
  const c = await startInMemory({
    capabilities: { workspace: { didChangeWatchedFiles: { dynamicRegistration: false } } },
    serverOptions: { watchDebounceMs: debounce },
  });
  clients.push(c);
  return c;
}

const codes = (d: Diagnostic[] | undefined) => (d ?? []).map((x) => String(x.code)).sort();

/** Waits until the diagnostics last published for `uri` satisfy `pred` (bounded). */
async function until(c: TestClient, uri: string, pred: (codes: string[]) => boolean, ms = 10_000): Promise<string[]> {
  const end = Date.now() + ms;
  while (!pred(codes(c.diagnostics(uri)))) {
    const left = end - Date.now();
    if (left <= 0) throw new Error(`diagnostics of ${uri} stayed ${JSON.stringify(codes(c.diagnostics(uri)))}`);
    await Promise.race([c.nextDiagnostics(uri), new Promise((r) => setTimeout(r, left))]);
  }
  return codes(c.diagnostics(uri));
}

/** A workspace whose second shard lives elsewhere, reached through a link `linked` beside the spec. */
function linkedShards(): { ws: ReturnType<typeof makeWorkspace>; real: string } {
  const ws = makeWorkspace();
  const real = path.join(tmp(), 'shards');
  mkdirSync(real);
  renameSync(path.join(ws.dir, 'ckpt', 'b.safetensors'), path.join(real, 'b.safetensors'));
  symlinkSync(real, path.join(ws.dir, 'linked'));
  const s = ws.spec();
  s.files[1]!.path = 'linked/b.safetensors';
  writeFileSync(ws.specFile, ws.text(s));
  return { ws, real };
}

describe('own file watching (client without watchers)', () => {
  it('does not ask the client to watch, and notices a shard renamed away and back', async () => {
    const c = await noWatchClient();
    const ws = makeWorkspace();
    const { uri, diagnostics } = await c.open(ws.specFile);
    expect(diagnostics).toEqual([]);
    expect(c.registrations).toEqual([]);
    const b = path.join(ws.dir, 'ckpt', 'b.safetensors');
    renameSync(b, `${b}.old`);
    expect(await until(c, uri, (x) => x.includes('file-missing'))).toContain('file-missing');
    renameSync(`${b}.old`, b);
    expect(await until(c, uri, (x) => x.length === 0)).toEqual([]);
    expect(c.version(uri)).toBe(1); // no edit
  });

  it('notices the companion ONNX rewritten without an input, and restored', async () => {
    const c = await noWatchClient();
    const ws = makeWorkspace();
    const { uri } = await c.open(ws.specFile);
    const onnx = path.join(ws.dir, 'model.onnx');
    const inputs = [
      { name: 'input_ids', elem: ELEM.INT64, dims: ['batch', 'seq'] },
      { name: 'model.embed_tokens.weight', elem: ELEM.FLOAT, dims: [16, 4] },
      { name: 'model.layers.0.self_attn.q_proj.weight', elem: ELEM.FLOAT, dims: [4, 4] },
      { name: 'model.layers.0.self_attn.k_proj.weight', elem: ELEM.FLOAT, dims: [2, 4] },
      { name: 'model.norm.weight', elem: ELEM.FLOAT, dims: [4] },
    ];
    const outputs = [{ name: 'logits', elem: ELEM.FLOAT, dims: ['batch', 'seq', 16] }];
    writeFileSync(onnx, onnxBytes(inputs, outputs)); // lm_head.weight is no longer a graph input
    expect(await until(c, uri, (x) => x.includes('name-not-in-onnx'))).toEqual(['name-not-in-onnx']);
    writeFileSync(onnx, onnxBytes([...inputs, { name: 'lm_head.weight', elem: ELEM.FLOAT, dims: [16, 4] }], outputs));
    expect(await until(c, uri, (x) => x.length === 0)).toEqual([]);
  });

  it("follows a symlinked shard folder: a change at the link's target is noticed", async () => {
    const c = await noWatchClient();
    const { ws, real } = linkedShards();
    const { uri, diagnostics } = await c.open(ws.specFile);
    expect(diagnostics).toEqual([]);
    writeTensors(path.join(real, 'b.safetensors'), [{ key: 'model.norm.weight', dtype: 'F32', shape: [4] }]); // lm_head.weight gone
    expect(await until(c, uri, (x) => x.length > 0)).toEqual(['key-missing']);
  });

  it('a prepared folder gets its sentinel: prepared-incomplete clears', async () => {
    const c = await noWatchClient();
    const ws = makeWorkspace();
    preparedCopy(ws.dir, 'tiny-qeff-prepared-float32', { sentinel: false });
    const s = ws.spec();
    s.files[0]!.path = 'tiny-qeff-prepared-float32/a.safetensors';
    writeFileSync(ws.specFile, ws.text(s));
    const { uri, diagnostics } = await c.open(ws.specFile);
    expect(codes(diagnostics)).toEqual(['prepared-incomplete']);
    // The sentinel holds the manifest's fingerprint (see preparedCopy).
    writeFileSync(path.join(ws.dir, 'tiny-qeff-prepared-float32', '.checkpoint_prepared'), 'ab'.repeat(32));
    expect(await until(c, uri, (x) => x.length === 0)).toEqual([]);
  });

  it('a burst of changes is one re-check (debounced)', async () => {
    const c = await noWatchClient(200);
    const ws = makeWorkspace();
    const { uri } = await c.open(ws.specFile);
    const published = () => c.published.filter((p) => p.uri === uri).length;
    const before = published();
    const b = path.join(ws.dir, 'ckpt', 'b.safetensors');
    // A write every 30 ms for 300 ms (a copy in progress): each within the debounce of the last.
    for (let k = 0; k < 10; k++) {
      utimesSync(b, new Date(), new Date(Date.now() + k * 1000));
      await new Promise((r) => setTimeout(r, 30));
    }
    await expect.poll(() => published() - before, { timeout: 10_000 }).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 600)); // longer than the debounce: any second check would show
    expect(published() - before).toBe(1);
  });
});

/**
 * A client that claims dynamic watching but reports nothing, as eglot 1.9 for folders that
 * hold no project files; `watched` records the folders the server's own watcher opened.
 */
async function claimingClient(folder: string, init: Record<string, unknown> = {}): Promise<TestClient & { watched: string[] }> {
  const watched: string[] = [];
  const c = await startInMemory({
    workspaceFolders: [{ uri: pathToFileURL(folder).toString(), name: 'ws' }],
    initializationOptions: init,
    serverOptions: { watchDebounceMs: 50, watchOptions: { watch: (d, o, l) => (watched.push(d), fs.watch(d, o, l)) } },
  });
  clients.push(c);
  return Object.assign(c, { watched });
}

describe('own file watching when the client claims it (folders it could miss)', () => {
  it('a shard folder behind a symlink inside the workspace folder is watched by the server; plain folders are left to the client', async () => {
    const { ws, real } = linkedShards();
    const c = await claimingClient(ws.dir, { roots: [real] });
    const { uri, diagnostics } = await c.open(ws.specFile);
    expect(diagnostics).toEqual([]);
    await expect.poll(() => c.registrations.length).toBeGreaterThan(0); // the client is still asked to watch
    expect(c.watched.sort()).toEqual([path.join(ws.dir, 'linked'), real].sort());
    renameSync(path.join(real, 'b.safetensors'), path.join(real, 'b.old'));
    expect(await until(c, uri, (x) => x.includes('file-missing'))).toContain('file-missing');
    expect(c.version(uri)).toBe(1); // no edit
  });

  it('a shard folder outside the workspace folders (admitted by roots) is watched by the server', async () => {
    const ws = makeWorkspace();
    const outside = path.join(tmp(), 'shards');
    mkdirSync(outside);
    renameSync(path.join(ws.dir, 'ckpt', 'b.safetensors'), path.join(outside, 'b.safetensors'));
    const s = ws.spec();
    s.files[1]!.path = path.join(outside, 'b.safetensors');
    writeFileSync(ws.specFile, ws.text(s));
    const c = await claimingClient(ws.dir, { roots: [outside] });
    const { uri, diagnostics } = await c.open(ws.specFile);
    expect(diagnostics).toEqual([]);
    expect(c.watched).toEqual([outside]);
    renameSync(path.join(outside, 'b.safetensors'), path.join(outside, 'b.old'));
    expect(await until(c, uri, (x) => x.includes('file-missing'))).toContain('file-missing');
  });
});

describe('missedByClient', () => {
  it('inside a root without links: no; behind a link, dangling or not, outside every root, or without roots: yes', () => {
    const dir = tmp();
    mkdirSync(path.join(dir, 'ws', 'plain'), { recursive: true });
    mkdirSync(path.join(dir, 'elsewhere'));
    symlinkSync(path.join(dir, 'elsewhere'), path.join(dir, 'ws', 'link'));
    symlinkSync(path.join(dir, 'not-yet'), path.join(dir, 'ws', 'dangling'));
    const roots = [path.join(dir, 'ws')];
    expect(missedByClient(path.join(dir, 'ws', 'plain'), roots)).toBe(false);
    expect(missedByClient(path.join(dir, 'ws'), roots)).toBe(false);
    expect(missedByClient(path.join(dir, 'ws', 'link'), roots)).toBe(true);
    expect(missedByClient(path.join(dir, 'ws', 'link', 'sub'), roots)).toBe(true);
    expect(missedByClient(path.join(dir, 'ws', 'dangling'), roots)).toBe(true);
    expect(missedByClient(path.join(dir, 'elsewhere'), roots)).toBe(true);
    expect(missedByClient(path.join(dir, 'ws-sibling'), roots)).toBe(true);
    expect(missedByClient(path.join(dir, 'ws', 'plain'), [])).toBe(true);
    // Another root holding it without a link wins over one it is linked into.
    expect(missedByClient(path.join(dir, 'ws', 'link'), [...roots, path.join(dir, 'ws', 'link')])).toBe(false);
  });
});

describe('FsWatchers', () => {
  it('reports a change in a watched folder once per debounce, and nothing after remove', async () => {
    const dir = tmp();
    const seen: string[][] = [];
    const w = new FsWatchers((uris) => void seen.push(uris), 20);
    try {
      w.update('file:///spec.json', [dir]);
      writeFileSync(path.join(dir, 'a'), '1');
      await expect.poll(() => seen, { timeout: 5000 }).toEqual([['file:///spec.json']]);
      w.remove('file:///spec.json');
      writeFileSync(path.join(dir, 'b'), '1');
      await new Promise((r) => setTimeout(r, 200));
      expect(seen).toEqual([['file:///spec.json']]);
    } finally {
      w.dispose();
    }
  });
});

describe('FsWatchers without fs.watch (the polling fallback)', () => {
  /** A watcher that refuses as fs.watch does once the inotify watches are used up. */
  const exhausted = (): never => {
    throw Object.assign(new Error('ENOSPC: System limit for number of file watchers reached, watch'), { code: 'ENOSPC' });
  };

  it('polls the folder when fs.watch refuses: a sentinel created and a shard renamed are reported', async () => {
    const dir = tmp();
    writeFileSync(path.join(dir, 'a.safetensors'), '');
    const seen: string[][] = [];
    const w = new FsWatchers((uris) => void seen.push(uris), 20, { pollMs: 50, watch: exhausted });
    try {
      w.update('file:///spec.json', [dir]);
      await new Promise((r) => setTimeout(r, 120)); // the poll's first stat
      writeFileSync(path.join(dir, '.checkpoint_prepared'), 'x');
      await expect.poll(() => seen.length, { timeout: 5000 }).toBe(1);
      renameSync(path.join(dir, 'a.safetensors'), path.join(dir, 'b.safetensors'));
      await expect.poll(() => seen.length, { timeout: 5000 }).toBe(2);
      expect(seen).toEqual([['file:///spec.json'], ['file:///spec.json']]);
      w.remove('file:///spec.json');
      writeFileSync(path.join(dir, 'c'), '');
      await new Promise((r) => setTimeout(r, 300));
      expect(seen).toHaveLength(2); // unwatched after remove
    } finally {
      w.dispose();
    }
  });

  it('a watch that breaks (an error event) becomes a poll', async () => {
    const dir = tmp();
    const seen: string[][] = [];
    let broken: fs.FSWatcher | undefined;
    const w = new FsWatchers((uris) => void seen.push(uris), 20, {
      pollMs: 50,
      // A real fs.watch whose events are never delivered, then fails.
      watch: (d, o) => (broken = fs.watch(d, o, () => undefined)),
    });
    try {
      w.update('file:///spec.json', [dir]);
      broken!.emit('error', new Error('EIO'));
      await new Promise((r) => setTimeout(r, 120));
      writeFileSync(path.join(dir, '.checkpoint_prepared'), 'x');
      await expect.poll(() => seen, { timeout: 5000 }).toEqual([['file:///spec.json']]);
    } finally {
      w.dispose();
    }
  });

  it('the server re-checks through the fallback too', async () => {
    // Same client as above, but the server's watcher cannot use fs.watch.
    const c = await startInMemory({
      capabilities: { workspace: { didChangeWatchedFiles: { dynamicRegistration: false } } },
      serverOptions: { watchDebounceMs: 20, watchOptions: { pollMs: 50, watch: exhausted } },
    });
    clients.push(c);
    const ws = makeWorkspace();
    const { uri } = await c.open(ws.specFile);
    const b = path.join(ws.dir, 'ckpt', 'b.safetensors');
    await new Promise((r) => setTimeout(r, 120));
    renameSync(b, `${b}.old`);
    expect(await until(c, uri, (x) => x.includes('file-missing'))).toContain('file-missing');
  });
});

describe('watchTargets', () => {
  it('a folder that does not exist yet is watched through its nearest existing ancestor', () => {
    const dir = tmp();
    expect([...watchTargets([path.join(dir, 'a', 'b')])]).toEqual([dir]);
  });

  it('a symlinked folder is watched at the link and at its target', () => {
    const dir = tmp();
    mkdirSync(path.join(dir, 'real'));
    symlinkSync(path.join(dir, 'real'), path.join(dir, 'link'));
    expect([...watchTargets([path.join(dir, 'link')])].sort()).toEqual([path.join(dir, 'link'), path.join(dir, 'real')].sort());
  });

  it("a dangling link (the export's prepared folder before prepare) is watched where its target will appear", () => {
    const dir = tmp();
    mkdirSync(path.join(dir, 'exp'));
    mkdirSync(path.join(dir, 'elsewhere'));
    symlinkSync(path.join(dir, 'elsewhere', 'prepared'), path.join(dir, 'exp', 'prepared'));
    const t = watchTargets([path.join(dir, 'exp', 'prepared')]);
    expect(t.has(path.join(dir, 'elsewhere'))).toBe(true); // the target's creation
    expect(t.has(path.join(dir, 'exp'))).toBe(true); // the link's replacement
  });
});
