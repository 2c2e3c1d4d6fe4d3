// The bundled server (dist/server.js --stdio), spawned as the extension would, over real
// JSON-RPC on its stdio: initialize, diagnostics, hover, shutdown/exit.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { SERVER_COMMANDS } from '../../core/src/protocol';
import { REPO_ROOT } from '../../test/support/fixtures';
import { connectClient, positionOf, type TestClient } from './harness';
import { bundleServer } from './support';
import { makeWorkspace } from './workspace';

describe('dist/server.js --stdio', () => {
  let child: ChildProcess;
  let client: TestClient;
  let exited: Promise<number | null>;
  let stderr = '';
  beforeAll(async () => {
    await bundleServer(REPO_ROOT);
    child = spawn(process.execPath, [path.join(REPO_ROOT, 'dist', 'server.js'), '--stdio'], { stdio: ['pipe', 'pipe', 'pipe'] });
    child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
    exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
    client = await connectClient(child.stdin!, child.stdout!);
  });
  afterAll(() => {
    client?.close();
    if (child && child.exitCode === null) child.kill();
  });

  it('publishes key-missing on the key string and answers hover', async () => {
    const ws = makeWorkspace();
    const s = ws.spec();
    s.inputs[1]!.location.key = 'model.layers.0.self_attn.q_prj.weight';
    const text = ws.text(s);
    const { uri, diagnostics } = await client.open(ws.specFile, text);
    expect(diagnostics.map((d) => d.code)).toEqual(['key-missing']);
    const at = text.indexOf('"model.layers.0.self_attn.q_prj.weight"');
    expect(diagnostics[0]!.range.start).toEqual(positionOf(text, at));
    expect(diagnostics[0]!.range.end).toEqual(positionOf(text, at + '"model.layers.0.self_attn.q_prj.weight"'.length));
    const hover = await client.request<{ contents: { value: string } }>('textDocument/hover', {
      textDocument: { uri },
      position: positionOf(text, text.indexOf('"key": "model.norm.weight"') + 10),
    });
    expect(hover.contents.value).toContain('dtype `F32` · shape `[4]`');
  });

  it('shuts down and exits with code 0', async () => {
    await client.request('shutdown', null);
    client.notify('exit', null);
    expect(await exited).toBe(0);
    expect(stderr).toBe('');
  });
});

describe('the weight-spec-language-server bin (package.json)', () => {
  it('runs through its shebang with no arguments and speaks stdio, announcing the server commands', async () => {
    const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
    const bin = path.join(REPO_ROOT, pkg.bin['weight-spec-language-server']!);
    await bundleServer(REPO_ROOT);
    const shebang = readFileSync(bin, 'utf8').split('\n')[0]!;
    expect(shebang).toBe('#!/usr/bin/env node');
    // What the kernel runs for an executable with that first line (npm links the bin so).
    const child = spawn('/usr/bin/env', ['node', bin], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const rpc = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
    rpc.listen();
    try {
      const init = await Promise.race([
        rpc.sendRequest<{ capabilities: { executeCommandProvider?: { commands: string[] } } }>('initialize', {
          processId: process.pid,
          rootUri: null,
          capabilities: {},
        }),
        exited.then((code) => Promise.reject(new Error(`the server exited (${code}) before answering initialize: ${stderr}`))),
      ]);
      expect(init.capabilities.executeCommandProvider?.commands).toEqual(Object.values(SERVER_COMMANDS));
      await rpc.sendRequest('shutdown', null);
      await rpc.sendNotification('exit', null);
      expect(await exited).toBe(0);
      expect(stderr).toBe('');
    } finally {
      rpc.dispose();
      if (child.exitCode === null) child.kill();
    }
  });
});
