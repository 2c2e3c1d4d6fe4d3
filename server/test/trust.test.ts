// Issue #28 point 1 over the real wire: dist/server.js --stdio, a workspace whose
// export-report.json and compile.json name the user's own folders elsewhere (a relative
// `../../victim/…` and absolute paths, and a symlink shipped in the export). The server's
// prepare and compile, run through workspace/executeCommand, must refuse with one line naming
// the file and the field, and change no byte outside the workspace (sha256 of every file of
// the victim folder before and after).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SERVER_COMMANDS, type ServerCommandResult } from '../../core/src/protocol';
import { describeFixtures, fixturesDir, REPO_ROOT } from '../../test/support/fixtures';
import { tempDirs } from '../../test/support/temp';
import { connectClient, type TestClient } from './harness';
import { bundleServer } from './support';

const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');
const tmp = tempDirs('ws-trust-');
const cli = (args: string[]) => execFileSync(process.execPath, [CLI, ...args], { cwd: REPO_ROOT, stdio: 'pipe' }).toString();

/** sha256 of every file (and link target) below `dir`, by relative path. */
function hashes(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      const rel = path.relative(dir, p);
      if (e.isSymbolicLink()) out[rel] = `link:${fs.readlinkSync(p)}`;
      else if (e.isDirectory()) walk(p);
      else out[rel] = createHash('sha256').update(fs.readFileSync(p)).digest('hex');
    }
  };
  walk(dir);
  return out;
}

describeFixtures('a workspace naming folders outside it (dist/server.js over JSON-RPC)', () => {
  let child: ChildProcess;
  let client: TestClient;
  let root: string;
  let victim: string;
  let ws: string;
  const messages: string[] = [];

  beforeAll(async () => {
    await bundleServer(REPO_ROOT);
    root = tmp();
    // The user's own work: an export, its prepared folder, a compile with the shards linked.
    victim = path.join(root, 'victim');
    fs.mkdirSync(victim);
    fs.cpSync(path.join(fixturesDir(), 'llama'), path.join(victim, 'llama'), { recursive: true });
    cli(['export', '--config', path.join(victim, 'llama'), '--out', path.join(victim, 'exp')]);
    const report = JSON.parse(fs.readFileSync(path.join(victim, 'exp', 'export-report.json'), 'utf8')) as Record<string, unknown>;
    const preparedDir = (report.prepared as { dir: string }).dir;
    cli(['prepare', '--checkpoint', path.join(victim, 'llama'), '--dtype', 'float32', '--out', preparedDir]);
    cli(['compile', path.join(victim, 'exp'), '--link-shards']);
    const preparedName = path.basename(preparedDir);

    // The repository: a checkpoint of the same architecture with other weights, and two exports.
    ws = path.join(root, 'ws');
    fs.mkdirSync(ws);
    fs.cpSync(path.join(victim, 'llama'), path.join(ws, 'ckpt'), { recursive: true });
    const shard = path.join(ws, 'ckpt', 'model-00002-of-00002.safetensors');
    const bytes = fs.readFileSync(shard);
    bytes.fill(0x3f, bytes.length - 64);
    fs.writeFileSync(shard, bytes);
    for (const name of ['exp-a', 'exp-b']) {
      fs.mkdirSync(path.join(ws, name));
      for (const f of ['model.onnx', 'weight_spec.json']) fs.copyFileSync(path.join(victim, 'exp', f), path.join(ws, name, f));
    }
    // exp-a: Prepare's --out is the user's prepared folder, relative (ckpt and exp-a are siblings,
    // so it means the same folder against the report and against the checkpoint as cwd).
    fs.writeFileSync(
      path.join(ws, 'exp-a', 'export-report.json'),
      JSON.stringify({ ...report, source: { checkpoint: path.join(ws, 'ckpt') }, prepared: { dir: `../../victim/${preparedName}` } }),
    );
    // exp-b: a record copied from the user's export (its stamps name the user's files) and a
    // prepared link inside the workspace to a copy of the prepared folder.
    fs.cpSync(preparedDir, path.join(ws, 'prep'), { recursive: true });
    fs.symlinkSync(path.join(ws, 'prep'), path.join(ws, 'exp-b', preparedName));
    fs.copyFileSync(path.join(victim, 'exp', 'compile.json'), path.join(ws, 'exp-b', 'compile.json'));
    fs.writeFileSync(
      path.join(ws, 'exp-b', 'export-report.json'),
      JSON.stringify({ ...report, source: { checkpoint: path.join(ws, 'ckpt') }, prepared: {} }),
    );

    child = spawn(process.execPath, [path.join(REPO_ROOT, 'dist', 'server.js'), '--stdio'], { stdio: ['pipe', 'pipe', 'pipe'] });
    client = await connectClient(child.stdin!, child.stdout!, { workspaceFolders: [{ uri: pathToFileURL(ws).toString(), name: 'ws' }] });
    client.rpc.onNotification('window/showMessage', (m: { message: string }) => void messages.push(m.message));
  }, 240_000);

  afterAll(() => {
    client?.close();
    if (child && child.exitCode === null) child.kill();
  });

  const run = (command: string, file: string) =>
    client.request<ServerCommandResult>('workspace/executeCommand', { command, arguments: [pathToFileURL(file).toString()] });

  it('prepare refuses a report whose prepared.dir leads to the user folder, and nothing there changes', async () => {
    const before = hashes(victim);
    const r = await run(SERVER_COMMANDS.prepare, path.join(ws, 'exp-a', 'weight_spec.json'));
    expect(hashes(victim)).toEqual(before);
    expect(r.ok).toBe(false);
    expect(r.message.split('\n')).toHaveLength(1);
    expect(r.message).toContain(path.join(ws, 'exp-a', 'export-report.json'));
    expect(r.message).toContain('"prepared.dir"');
    expect(r.message).toContain(
      path.join(
        victim,
        fs.readdirSync(victim).find((n) => n.includes('-prepared-'))!,
      ),
    );
  });

  it('compile refuses a compile.json from the user folder, and nothing there changes', async () => {
    const before = hashes(victim);
    const r = await run(SERVER_COMMANDS.compile, path.join(ws, 'exp-b', 'weight_spec.json'));
    expect(hashes(victim)).toEqual(before);
    expect(r.ok).toBe(false);
    expect(r.message.split('\n')).toHaveLength(1);
    expect(r.message).toContain(path.join(ws, 'exp-b', 'compile.json'));
    expect(r.message).toMatch(/"(prepared|artifacts\.model)"/);
  });

  it('compile refuses the export whose report points outside, and a command argument outside the workspace', async () => {
    const before = hashes(victim);
    const r = await run(SERVER_COMMANDS.compile, path.join(ws, 'exp-a', 'weight_spec.json'));
    expect(r).toMatchObject({ ok: false });
    expect(r.message).toContain('"prepared.dir"');
    const outside = await run(SERVER_COMMANDS.compile, path.join(victim, 'exp', 'weight_spec.json'));
    expect(outside).toMatchObject({ ok: false });
    expect(outside.message).toContain('outside the workspace');
    expect(hashes(victim)).toEqual(before);
    expect(messages.length).toBeGreaterThanOrEqual(3);
  });
});

describeFixtures('the trust switch for settings that name code to run (issue #28 point 7)', () => {
  /** A prepared export of the llama fixture and a fake onnxruntime-node that leaves a mark when loaded. */
  function setup(): { dir: string; spec: string; fakeOrt: string; mark: string } {
    const dir = tmp();
    fs.cpSync(path.join(fixturesDir(), 'llama'), path.join(dir, 'llama'), { recursive: true });
    cli(['export', '--config', path.join(dir, 'llama'), '--out', path.join(dir, 'exp')]);
    cli(['prepare', '--checkpoint', path.join(dir, 'llama'), '--dtype', 'float32']);
    const fakeOrt = path.join(dir, 'tools', 'onnxruntime-node');
    const mark = path.join(dir, 'ran-project-code');
    fs.mkdirSync(fakeOrt, { recursive: true });
    fs.writeFileSync(path.join(fakeOrt, 'package.json'), JSON.stringify({ name: 'onnxruntime-node', main: 'index.js' }));
    fs.writeFileSync(
      path.join(fakeOrt, 'index.js'),
      `require('fs').writeFileSync(${JSON.stringify(mark)}, 'x'); throw new Error('fake');\n`,
    );
    return { dir, spec: path.join(dir, 'exp', 'weight_spec.json'), fakeOrt, mark };
  }

  /** A client answering workspace/configuration from "project files" with onnxRuntimePath. */
  async function client(dir: string, fakeOrt: string, init: Record<string, unknown>): Promise<TestClient> {
    const { startInMemory } = await import('./harness');
    const c = await startInMemory({
      capabilities: { workspace: { configuration: true } },
      initializationOptions: init,
      workspaceFolders: [{ uri: pathToFileURL(dir).toString(), name: 'ws' }],
      serverOptions: { cliPath: CLI },
    });
    c.rpc.onRequest('workspace/configuration', (p: { items: unknown[] }) => p.items.map(() => ({ onnxRuntimePath: fakeOrt })));
    c.rpc.onNotification('window/showMessage', () => undefined);
    return c;
  }

  beforeAll(async () => {
    await bundleServer(REPO_ROOT);
  }, 120_000);

  it('ignores a project-level onnxRuntimePath by default, and uses it when the client sets trustWorkspaceSettings', async () => {
    const { dir, spec, fakeOrt, mark } = setup();
    const uri = pathToFileURL(spec).toString();
    const c = await client(dir, fakeOrt, {});
    try {
      const r = await c.request<ServerCommandResult>('workspace/executeCommand', { command: SERVER_COMMANDS.compile, arguments: [uri] });
      expect(fs.existsSync(mark)).toBe(false);
      expect(r).toMatchObject({ ok: true });
    } finally {
      c.close();
    }
    const trusting = await client(dir, fakeOrt, { trustWorkspaceSettings: true });
    try {
      await trusting.request<ServerCommandResult>('workspace/executeCommand', { command: SERVER_COMMANDS.recompile, arguments: [uri] });
      expect(fs.existsSync(mark)).toBe(true);
    } finally {
      trusting.close();
    }
  }, 120_000);
});
