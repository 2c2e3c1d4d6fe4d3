// The server's own commands and file watching, for clients that run neither (Neovim 0.7):
// a real export of a copy of the llama fixture, a real prepare by dist/cli.js through
// workspace/executeCommand, and fs.watch noticing files written behind the server's back.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, readlinkSync, realpathSync, watch } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, expect, it } from 'vitest';
import { CancellationTokenSource } from 'vscode-jsonrpc/node';
import type { CodeLens } from 'vscode-languageserver-protocol';
import { SERVER_COMMANDS, type ServerCommandResult } from '../../core/src/protocol';
import { describeFixtures, fixturesDir, REPO_ROOT } from '../../test/support/fixtures';
import { tempDirs } from '../../test/support/temp';
import { startInMemory, type TestClient } from './harness';
import { bundleServer } from './support';

const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');
const tmp = tempDirs('ws-lsp-cmd-');
const cli = (args: string[]) => execFileSync(process.execPath, [CLI, ...args], { cwd: REPO_ROOT, stdio: 'pipe' }).toString();

/** An export of a fresh copy of the llama fixture (its prepared dir lands in the temp dir). */
function exported(): { dir: string; spec: string; prepared: string } {
  const dir = tmp();
  cpSync(path.join(fixturesDir(), 'llama'), path.join(dir, 'llama'), { recursive: true });
  cli(['export', '--config', path.join(dir, 'llama'), '--out', path.join(dir, 'exp')]);
  // Where export says prepare will write (its report), a folder beside the checkpoint copy.
  const report = JSON.parse(readFileSync(path.join(dir, 'exp', 'export-report.json'), 'utf8')) as { prepared: { dir: string } };
  expect(path.dirname(report.prepared.dir)).toBe(dir);
  return { dir, spec: path.join(dir, 'exp', 'weight_spec.json'), prepared: report.prepared.dir };
}

/** A client like Neovim 0.7: progress yes, dynamic file watchers no, no custom options. */
async function neovimLike(root?: string): Promise<TestClient & { messages: { type: number; message: string }[]; progress: unknown[] }> {
  const c = await startInMemory({
    // The workspace holds the checkpoint, the export and the prepared folder (issue #28: paths
    // from export-report.json must stay inside the workspace).
    ...(root ? { workspaceFolders: [{ uri: pathToFileURL(root).toString(), name: 'ws' }] } : {}),
    capabilities: { window: { workDoneProgress: true }, workspace: { didChangeWatchedFiles: { dynamicRegistration: false } } },
    serverOptions: { cliPath: CLI, watchDebounceMs: 50 },
  });
  const messages: { type: number; message: string }[] = [];
  const progress: unknown[] = [];
  c.rpc.onNotification('window/showMessage', (m: { type: number; message: string }) => void messages.push(m));
  c.rpc.onRequest('window/workDoneProgress/create', () => null);
  c.rpc.onNotification('$/progress', (p: { value: unknown }) => void progress.push(p.value));
  return Object.assign(c, { messages, progress });
}

describeFixtures('server commands and own watching (clients without them)', () => {
  beforeAll(async () => {
    await bundleServer(REPO_ROOT);
  }, 120_000);

  it('lenses carry the server commands, unless the client runs its own (the extension)', async () => {
    const { dir, spec } = exported();
    const c = await neovimLike(dir);
    const vs = await startInMemory({ initializationOptions: { clientCommands: true } });
    try {
      const { uri } = await c.open(spec);
      const lenses = await c.request<CodeLens[]>('textDocument/codeLens', { textDocument: { uri } });
      expect(lenses.map((l) => l.command!.command)).toEqual([SERVER_COMMANDS.prepare, SERVER_COMMANDS.compile, SERVER_COMMANDS.inspect]);
      await vs.open(spec);
      const theirs = await vs.request<CodeLens[]>('textDocument/codeLens', { textDocument: { uri } });
      expect(theirs.map((l) => l.command!.command)).toEqual(['weightSpec.prepare', 'weightSpec.compile', 'weightSpec.inspect']);
    } finally {
      c.close();
      vs.close();
    }
  });

  it('the Prepare lens runs through workspace/executeCommand: progress, a message, prepared files, diagnostics clear', async () => {
    const { dir, spec, prepared } = exported();
    const c = await neovimLike(dir);
    try {
      const { uri, diagnostics } = await c.open(spec);
      expect(diagnostics.map((d) => d.code)).toEqual(['not-prepared']);
      const lens = (await c.request<CodeLens[]>('textDocument/codeLens', { textDocument: { uri } }))[0]!;
      const r = await c.request<ServerCommandResult>('workspace/executeCommand', {
        command: lens.command!.command,
        arguments: lens.command!.arguments,
      });
      expect(r).toMatchObject({ ok: true });
      expect(existsSync(path.join(prepared, '.checkpoint_prepared'))).toBe(true);
      // QEfficient's link from the export to the folder just made (issue 50.1): the spec's own paths resolve.
      const link = path.join(dir, 'exp', path.basename(prepared));
      expect(readlinkSync(link)).toBe(realpathSync(prepared));
      const files = (JSON.parse(readFileSync(spec, 'utf8')) as { files: { path: string }[] }).files;
      for (const f of files) expect(existsSync(path.join(dir, 'exp', f.path))).toBe(true);
      // Re-checked once the command finished, without an edit, and published before the reply
      // (a client may leave what follows a reply unread: jsonrpc 1.0.14, eglot on Emacs 28).
      expect(c.published.filter((p) => p.uri === uri).at(-1)?.count).toBe(0);
      expect(c.version(uri)).toBe(1);
      expect(c.messages).toEqual([{ type: 3, message: expect.stringContaining(`Prepared ${path.join(path.dirname(prepared), 'llama')}`) }]);
      const kinds = c.progress.map((p) => (p as { kind: string }).kind);
      expect(kinds[0]).toBe('begin');
      expect(kinds.at(-1)).toBe('end');
    } finally {
      c.close();
    }
  }, 60_000);

  it("the Compile and Inspect lenses run through workspace/executeCommand: compile.json written, the lens turns to Re-run, inspect's table returned", async () => {
    const { dir, spec } = exported();
    cli(['prepare', '--checkpoint', path.join(dir, 'llama'), '--dtype', 'float32']);
    const prepared = (JSON.parse(readFileSync(path.join(dir, 'exp', 'export-report.json'), 'utf8')) as { prepared: { dir: string } })
      .prepared.dir;
    const link = path.join(dir, 'exp', path.basename(prepared));
    expect(existsSync(link)).toBe(false); // prepare without --spec knows no export
    const c = await neovimLike(dir);
    try {
      const { uri, diagnostics } = await c.open(spec);
      expect(diagnostics).toEqual([]);
      const lenses = async () => c.request<CodeLens[]>('textDocument/codeLens', { textDocument: { uri } });
      const compile = (await lenses()).find((l) => l.command!.command === SERVER_COMMANDS.compile)!;
      expect(compile.command!.title).toBe('Compile (never compiled)');
      const r = await c.request<ServerCommandResult>('workspace/executeCommand', {
        command: compile.command!.command,
        arguments: compile.command!.arguments,
      });
      expect(r).toMatchObject({ ok: true, message: `Compiled ${path.join(dir, 'exp')} (ort)` });
      expect(existsSync(path.join(dir, 'exp', 'compile.json'))).toBe(true);
      // the compile found the folder: it links it into the export (issue 50.1)
      expect(readlinkSync(link)).toBe(realpathSync(prepared));
      const after = await lenses();
      expect(after.map((l) => l.command!.command)).toEqual([SERVER_COMMANDS.prepare, SERVER_COMMANDS.recompile, SERVER_COMMANDS.inspect]);
      expect(after[1]!.command!.title).toBe('Re-run compile (up to date)');
      const inspect = after[2]!;
      expect(inspect.command!.arguments).toEqual([pathToFileURL(path.join(dir, 'exp', 'model.onnx')).toString()]);
      const i = await c.request<ServerCommandResult>('workspace/executeCommand', {
        command: inspect.command!.command,
        arguments: inspect.command!.arguments,
      });
      expect(i.ok).toBe(true);
      expect(i.output).toContain('input_ids');
      expect(i.output).toContain('model.embed_tokens.weight');
      expect(c.messages.map((m) => m.type)).toEqual([3, 3]);
    } finally {
      c.close();
    }
  }, 120_000);

  it("a command's end re-checks the open specs itself (a client that registered watchers but reports nothing)", async () => {
    const { dir, spec, prepared } = exported();
    // Dynamic watchers that this client never reports, and the server's own watches (the
    // prepared folder is behind the export's symlink) never fire: only the command's end re-checks.
    const c = await startInMemory({
      serverOptions: { cliPath: CLI, watchOptions: { watch: (d, o) => watch(d, o, () => undefined) } },
      workspaceFolders: [{ uri: pathToFileURL(dir).toString(), name: 'ws' }],
    });
    c.rpc.onNotification('window/showMessage', () => undefined);
    try {
      const { uri, diagnostics } = await c.open(spec);
      expect(diagnostics.map((d) => d.code)).toEqual(['not-prepared']);
      await expect.poll(() => c.registrations.length).toBeGreaterThan(0);
      const before = c.published.length;
      const r = await c.request<ServerCommandResult>('workspace/executeCommand', { command: SERVER_COMMANDS.prepare, arguments: [uri] });
      expect(r.ok).toBe(true);
      expect(existsSync(path.join(prepared, '.checkpoint_prepared'))).toBe(true);
      // Published before the reply.
      expect(c.published.slice(before).filter((p) => p.uri === uri)).toEqual([{ uri, version: 1, count: 0 }]);
    } finally {
      c.close();
    }
  }, 60_000);

  it("a failing command answers ok: false with the CLI's one-line error as an error message", async () => {
    const c = await neovimLike();
    try {
      const missing = path.join(tmp(), 'nothing.onnx');
      const r = await c.request<ServerCommandResult>('workspace/executeCommand', {
        command: SERVER_COMMANDS.inspect,
        arguments: [missing],
      });
      expect(r.ok).toBe(false);
      expect(r.message).toMatch(/^weight-spec: .*nothing\.onnx/);
      expect(c.messages).toEqual([{ type: 1, message: r.message }]);
    } finally {
      c.close();
    }
  }, 30_000);

  it("progress goes to the client's workDoneToken when it sends one, and nowhere without window.workDoneProgress", async () => {
    const missing = pathToFileURL(path.join(tmp(), 'nothing.onnx')).toString();
    const c = await neovimLike();
    const created: unknown[] = [];
    c.rpc.onRequest('window/workDoneProgress/create', (p: unknown) => void created.push(p));
    const tokens: unknown[] = [];
    c.rpc.onNotification('$/progress', (p: { token: unknown; value: { kind: string } }) => void tokens.push([p.token, p.value.kind]));
    const plain = await startInMemory({ capabilities: {}, serverOptions: { cliPath: CLI } });
    const plainProgress: unknown[] = [];
    plain.rpc.onRequest('window/workDoneProgress/create', (p: unknown) => void plainProgress.push(p));
    plain.rpc.onNotification('$/progress', (p: unknown) => void plainProgress.push(p));
    plain.rpc.onNotification('window/showMessage', () => undefined);
    try {
      await c.request('workspace/executeCommand', {
        command: SERVER_COMMANDS.inspect,
        arguments: [missing],
        workDoneToken: 'client-token',
      });
      expect(created).toEqual([]);
      expect(tokens).toEqual([
        ['client-token', 'begin'],
        ['client-token', 'end'],
      ]);
      const r = await plain.request<ServerCommandResult>('workspace/executeCommand', {
        command: SERVER_COMMANDS.inspect,
        arguments: [missing],
      });
      expect(r.ok).toBe(false);
      expect(plainProgress).toEqual([]);
    } finally {
      c.close();
      plain.close();
    }
  }, 30_000);

  it('cancelling the request stops the CLI and leaves no prepared checkpoint', async () => {
    const { dir, spec, prepared } = exported();
    const c = await neovimLike(dir);
    try {
      const { uri } = await c.open(spec);
      const cts = new CancellationTokenSource();
      const pending = c.rpc.sendRequest<ServerCommandResult>(
        'workspace/executeCommand',
        { command: SERVER_COMMANDS.prepare, arguments: [uri] },
        cts.token,
      );
      cts.cancel();
      expect(await pending).toMatchObject({ ok: false, cancelled: true });
      expect(c.messages[0]).toMatchObject({ type: 2, message: expect.stringContaining('cancelled') });
      expect(existsSync(path.join(prepared, '.checkpoint_prepared'))).toBe(false);
    } finally {
      c.close();
    }
  }, 30_000);

  it('cancelling while the CLI prepares (its first progress report) leaves nothing: no prepared folder, no temporaries', async () => {
    const { dir, spec, prepared } = exported();
    const c = await neovimLike(dir);
    try {
      const { uri } = await c.open(spec);
      const cts = new CancellationTokenSource();
      const reports: unknown[] = [];
      c.rpc.onNotification('$/progress', (p: { value: { kind: string; message?: string } }) => {
        if (p.value.kind !== 'report') return;
        reports.push(p.value.message);
        cts.cancel(); // the CLI is running: it reported its first percentage
      });
      const r = await c.rpc.sendRequest<ServerCommandResult>(
        'workspace/executeCommand',
        { command: SERVER_COMMANDS.prepare, arguments: [uri] },
        cts.token,
      );
      expect(reports.length).toBeGreaterThan(0);
      expect(r).toMatchObject({ ok: false, cancelled: true });
      // The message carries the CLI's own account of its interrupt.
      expect(r.message).toMatch(/: cancelled — interrupted \(SIGTERM\): nothing was written to /);
      expect(c.messages).toEqual([{ type: 2, message: r.message }]);
      expect(existsSync(prepared)).toBe(false);
      expect(readdirSync(dir).sort()).toEqual(['exp', 'llama']); // no *.tmp-* folders beside the checkpoint
    } finally {
      c.close();
    }
  }, 30_000);

  it("Cancel on the server's progress (window/workDoneProgress/cancel) stops the CLI", async () => {
    const { dir, spec, prepared } = exported();
    const c = await neovimLike(dir);
    try {
      const { uri } = await c.open(spec);
      const tokens: unknown[] = [];
      c.rpc.onNotification('$/progress', (p: { token: unknown; value: { kind: string; cancellable?: boolean } }) => {
        if (p.value.kind !== 'begin') return;
        expect(p.value.cancellable).toBe(true);
        tokens.push(p.token);
        c.notify('window/workDoneProgress/cancel', { token: p.token });
      });
      const r = await c.request<ServerCommandResult>('workspace/executeCommand', { command: SERVER_COMMANDS.prepare, arguments: [uri] });
      expect(tokens).toHaveLength(1);
      expect(r).toMatchObject({ ok: false, cancelled: true });
      expect(c.messages).toEqual([{ type: 2, message: expect.stringContaining('cancelled') }]);
      expect(existsSync(path.join(prepared, '.checkpoint_prepared'))).toBe(false);
    } finally {
      c.close();
    }
  }, 30_000);

  it("without client watchers the server notices a prepare run elsewhere (through the export's symlink) and re-checks", async () => {
    const { dir, spec } = exported();
    const c = await neovimLike(dir);
    try {
      expect(c.registrations).toEqual([]);
      const { uri, diagnostics } = await c.open(spec);
      expect(diagnostics.map((d) => d.code)).toEqual(['not-prepared']);
      cli(['prepare', '--checkpoint', path.join(dir, 'llama'), '--dtype', 'float32']);
      await expect.poll(() => c.published.filter((p) => p.uri === uri).at(-1)?.count, { timeout: 10_000 }).toBe(0);
      expect(c.version(uri)).toBe(1); // no edit
    } finally {
      c.close();
    }
  }, 30_000);
});
