// Workspace-wide diagnostics (issue 19.3): a broken spec in a folder that is never opened is
// published at start-up; a checkpoint appearing on disk re-checks it; opening takes it over,
// closing hands it back; the scan stays within its limits. Real files, real JSON-RPC.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { writeSafetensors } from '../../core/src/formats/safetensors';
import { findSpecs } from '../src/workspace-diagnostics';
import { tempDirs } from '../../test/support/temp';
import { startInMemory, type TestClient } from './harness';

const tmp = tempDirs('ws-wsdiag-');
let client: TestClient | undefined;
afterEach(() => {
  client?.close();
  client = undefined;
});

/** A workspace with `deep/closed/broken.weight_spec.json` naming a shard that does not exist yet. */
function makeWorkspace(): { root: string; spec: string; shard: string } {
  const root = tmp();
  const dir = path.join(root, 'deep', 'closed');
  fs.mkdirSync(dir, { recursive: true });
  const spec = path.join(dir, 'broken.weight_spec.json');
  const doc = {
    files: [{ format: 'safetensors', path: 'ck/model.safetensors' }],
    inputs: [{ location: { file: 0, key: 'w' }, name: 'w' }],
    version: 5,
  };
  fs.writeFileSync(spec, JSON.stringify(doc, null, 2));
  // Never scanned: dependencies and VCS folders.
  fs.mkdirSync(path.join(root, 'node_modules', 'x'), { recursive: true });
  fs.writeFileSync(path.join(root, 'node_modules', 'x', 'weight_spec.json'), '{');
  return { root, spec, shard: path.join(dir, 'ck', 'model.safetensors') };
}

const codes = (d: { code?: unknown }[]) => d.map((x) => String(x.code));

describe('workspace diagnostics', () => {
  it('publishes the problems of a never-opened spec at start-up, and re-checks it when its checkpoint appears on disk', async () => {
    const ws = makeWorkspace();
    const uri = pathToFileURL(ws.spec).toString();
    const started = startInMemory({
      initializationOptions: { workspaceDiagnostics: true },
      workspaceFolders: [{ uri: pathToFileURL(ws.root).toString(), name: 'ws' }],
    });
    client = await started;
    const first = await client.nextDiagnostics(uri);
    expect(codes(first)).toContain('file-missing');
    await client.server!.workspaceDiagnostics()!.done;
    // Only the workspace's spec, not the one under node_modules.
    expect(new Set(client.published.map((p) => p.uri))).toEqual(new Set([uri]));

    fs.mkdirSync(path.dirname(ws.shard), { recursive: true });
    await writeSafetensors(ws.shard, [{ key: 'w', dtype: 'F32', shape: [2], data: new Uint8Array(8) }]);
    const next = client.nextDiagnostics(uri);
    client.notify('workspace/didChangeWatchedFiles', { changes: [{ uri: pathToFileURL(ws.shard).toString(), type: 1 }] });
    expect(codes(await next)).not.toContain('file-missing');
  });

  it("an opened spec is the open document's; closed again, its diagnostics come from disk instead of being cleared", async () => {
    const ws = makeWorkspace();
    client = await startInMemory({
      initializationOptions: { workspaceDiagnostics: true },
      workspaceFolders: [{ uri: pathToFileURL(ws.root).toString(), name: 'ws' }],
    });
    const uri = pathToFileURL(ws.spec).toString();
    await client.nextDiagnostics(uri);
    await client.server!.workspaceDiagnostics()!.done;
    const opened = await client.open(ws.spec);
    expect(codes(opened.diagnostics)).toContain('file-missing');
    const cleared = client.nextDiagnostics(uri);
    client.notify('textDocument/didClose', { textDocument: { uri } });
    expect(await cleared).toEqual([]); // the open document's diagnostics go with it…
    expect(codes(await client.nextDiagnostics(uri))).toContain('file-missing'); // …and the disk's come back
  });

  it("a workspace folder removed takes its specs' diagnostics with it; added back, they return", async () => {
    const ws = makeWorkspace();
    const folder = { uri: pathToFileURL(ws.root).toString(), name: 'ws' };
    client = await startInMemory({ initializationOptions: { workspaceDiagnostics: true }, workspaceFolders: [folder] });
    const uri = pathToFileURL(ws.spec).toString();
    expect(codes(await client.nextDiagnostics(uri))).toContain('file-missing');
    await client.server!.workspaceDiagnostics()!.done;
    let next = client.nextDiagnostics(uri);
    client.notify('workspace/didChangeWorkspaceFolders', { event: { added: [], removed: [folder] } });
    expect(await next).toEqual([]);
    next = client.nextDiagnostics(uri);
    client.notify('workspace/didChangeWorkspaceFolders', { event: { added: [folder], removed: [] } });
    expect(codes(await next)).toContain('file-missing');
  });

  it('a spec deleted from disk leaves Problems: a closed one when its folder is deleted (the one event a watcher sends), an open one when the file is', async () => {
    const ws = makeWorkspace();
    // A second spec, opened, in a folder of its own.
    const openDir = path.join(ws.root, 'open');
    fs.mkdirSync(openDir);
    const openSpec = path.join(openDir, 'weight_spec.json');
    fs.copyFileSync(ws.spec, openSpec);
    client = await startInMemory({
      initializationOptions: { workspaceDiagnostics: true },
      workspaceFolders: [{ uri: pathToFileURL(ws.root).toString(), name: 'ws' }],
    });
    const uri = pathToFileURL(ws.spec).toString();
    expect(codes(await client.nextDiagnostics(uri))).toContain('file-missing');
    await client.server!.workspaceDiagnostics()!.done;
    const opened = await client.open(openSpec);
    expect(codes(opened.diagnostics)).toContain('file-missing');

    // The closed spec's folder deleted: the client reports the folder, not the files it held.
    fs.rmSync(path.join(ws.root, 'deep'), { recursive: true });
    const cleared = client.nextDiagnostics(uri);
    client.notify('workspace/didChangeWatchedFiles', { changes: [{ uri: pathToFileURL(path.join(ws.root, 'deep')).toString(), type: 3 }] });
    expect(await cleared).toEqual([]);

    // The open spec deleted: the editor keeps its text, Problems drops it…
    fs.rmSync(openSpec);
    const gone = client.nextDiagnostics(opened.uri);
    client.notify('workspace/didChangeWatchedFiles', { changes: [{ uri: opened.uri, type: 3 }] });
    expect(await gone).toEqual([]);
    // …also when a file it names changes afterwards (its re-check publishes nothing)…
    const again = client.nextDiagnostics(opened.uri);
    client.notify('workspace/didChangeWatchedFiles', {
      changes: [{ uri: pathToFileURL(path.join(openDir, 'ck', 'model.safetensors')).toString(), type: 1 }],
    });
    expect(await again).toEqual([]);
    // …and created again, it is checked again.
    fs.writeFileSync(openSpec, opened.text);
    const back = client.nextDiagnostics(opened.uri);
    client.notify('workspace/didChangeWatchedFiles', { changes: [{ uri: opened.uri, type: 1 }] });
    expect(codes(await back)).toContain('file-missing');
  });

  it('without the option, closed specs get nothing (other clients keep the open-documents behaviour)', async () => {
    const ws = makeWorkspace();
    client = await startInMemory({ workspaceFolders: [{ uri: pathToFileURL(ws.root).toString(), name: 'ws' }] });
    expect(client.server!.workspaceDiagnostics()).toBeUndefined();
    await client.request('shutdown', null).catch(() => undefined);
    expect(client.published).toEqual([]);
  });

  it('the walk is bounded (specs, depth) and cancellable', async () => {
    const root = tmp();
    for (let i = 0; i < 5; i++) {
      fs.mkdirSync(path.join(root, `m${i}`, 'a', 'b'), { recursive: true });
      fs.writeFileSync(path.join(root, `m${i}`, 'weight_spec.json'), '{}');
      fs.writeFileSync(path.join(root, `m${i}`, 'a', 'b', 'x.weight_spec.json'), '{}');
    }
    const all = await findSpecs([root], { maxSpecs: 100, maxDepth: 8, maxEntries: 1e6 }, new AbortController().signal);
    expect(all).toHaveLength(10);
    expect(await findSpecs([root], { maxSpecs: 3, maxDepth: 8, maxEntries: 1e6 }, new AbortController().signal)).toHaveLength(3);
    // Depth 1 reaches m*/weight_spec.json, not m*/a/b/.
    expect(
      (await findSpecs([root], { maxSpecs: 100, maxDepth: 1, maxEntries: 1e6 }, new AbortController().signal)).every(
        (f) => path.basename(f) === 'weight_spec.json',
      ),
    ).toBe(true);
    const ac = new AbortController();
    ac.abort();
    expect(await findSpecs([root], { maxSpecs: 100, maxDepth: 8, maxEntries: 1e6 }, ac.signal)).toEqual([]);
  });
});
