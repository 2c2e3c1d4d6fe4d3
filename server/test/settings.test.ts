// Settings for clients other than the extension (docs/EDITOR.md "Other editors"): the command
// settings and `roots` come from workspace/configuration (section weightSpec), which wins over
// initializationOptions; initializationOptions may also nest them under `weightSpec` (Helix
// sends its `config` table there). Real JSON-RPC; the server's configuration requests are
// answered by the test client as Neovim, Helix and eglot answer them.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { SERVER_COMMANDS, type ServerCommandResult } from '../../core/src/protocol';
import { twoFileCheckpoint } from '../../core/test/support/check-helpers';
import { REPO_ROOT } from '../../test/support/fixtures';
import { tempDirs } from '../../test/support/temp';
import { startInMemory, type TestClient } from './harness';

const tmp = tempDirs('ws-lsp-settings-');
const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');
const clients: TestClient[] = [];
afterEach(() => {
  for (const c of clients.splice(0)) c.close();
});

/** `p`, or a rejection after 10 s (a missing re-check fails the test instead of stalling it). */
function within<T>(p: Promise<T>): Promise<T> {
  return Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error('no diagnostics within 10 s')), 10_000))]);
}

type ConfigItem = { section?: string; scopeUri?: string };

/** A client; with `config`, it declares workspace/configuration and answers with config(section). */
async function client(opts: {
  init?: Record<string, unknown>;
  config?: (item: ConfigItem) => unknown;
}): Promise<TestClient & { asked: ConfigItem[]; titles: string[] }> {
  const c = await startInMemory({
    capabilities: {
      window: { workDoneProgress: true },
      workspace: { configuration: opts.config !== undefined, didChangeConfiguration: {} },
    },
    initializationOptions: opts.init ?? {},
    serverOptions: { cliPath: CLI },
  });
  clients.push(c);
  const asked: ConfigItem[] = [];
  const titles: string[] = [];
  c.rpc.onRequest('workspace/configuration', (p: { items: ConfigItem[] }) => {
    asked.push(...p.items);
    return p.items.map((i) => opts.config!(i));
  });
  c.rpc.onRequest('window/workDoneProgress/create', () => null);
  c.rpc.onNotification('$/progress', (p: { value: { kind: string; title?: string } }) => {
    if (p.value.kind === 'begin') titles.push(p.value.title!);
  });
  c.rpc.onNotification('window/showMessage', () => undefined);
  return Object.assign(c, { asked, titles });
}

/** Runs the Compile command on an (empty) export folder; its progress title names the backend. */
async function compileTitle(c: TestClient & { titles: string[] }): Promise<string> {
  const dir = tmp();
  const r = await c.request<ServerCommandResult>('workspace/executeCommand', {
    command: SERVER_COMMANDS.compile,
    arguments: [pathToFileURL(dir).toString()],
  });
  expect(r.ok).toBe(false); // nothing exported there: the CLI's error
  expect(c.titles).toHaveLength(1);
  return c.titles[0]!;
}

describe('command settings', () => {
  it('workspace/configuration (section weightSpec, scoped to the file) wins over initializationOptions', async () => {
    const c = await client({
      init: { compileBackend: 'ort' },
      config: (i) => (i.section === 'weightSpec' ? { compileBackend: 'qaic' } : null),
    });
    expect(await compileTitle(c)).toMatch(/\(qaic\)$/);
    const scoped = c.asked.filter((i) => i.scopeUri);
    expect(scoped).toHaveLength(1);
    expect(scoped[0]!.section).toBe('weightSpec');
    expect(scoped[0]!.scopeUri).toMatch(/^file:\/\//);
  }, 30_000);

  it('initializationOptions apply when the client has no workspace/configuration, flat or nested under weightSpec', async () => {
    expect(await compileTitle(await client({ init: { compileBackend: 'qaic' } }))).toMatch(/\(qaic\)$/);
    expect(await compileTitle(await client({ init: { weightSpec: { compileBackend: 'qaic' } } }))).toMatch(/\(qaic\)$/);
    expect(await compileTitle(await client({}))).toMatch(/\(ort\)$/); // the default
  }, 30_000);

  it('a configuration without our section (Neovim answers null) keeps initializationOptions', async () => {
    const c = await client({ init: { compileBackend: 'qaic' }, config: () => null });
    expect(await compileTitle(c)).toMatch(/\(qaic\)$/);
  }, 30_000);
});

describe('roots', () => {
  /** A spec in specs/ whose files are absolute paths into weights/ (outside the spec's folder). */
  function outsideSpec(): { specFile: string; weights: string; files: number } {
    const dir = tmp();
    const weights = path.join(dir, 'weights');
    const { spec } = twoFileCheckpoint(weights);
    fs.mkdirSync(path.join(dir, 'specs'));
    const specFile = path.join(dir, 'specs', 'model.weight_spec.json');
    const abs = { ...spec, files: spec.files.map((f) => ({ ...f, path: path.join(weights, f.path) })) };
    fs.writeFileSync(specFile, JSON.stringify(abs, null, 2));
    return { specFile, weights, files: spec.files.length };
  }
  const outside = (d: { code?: unknown }[]) => d.filter((x) => x.code === 'path-outside-root').length;

  it('come from workspace/configuration, and are pulled again on didChangeConfiguration without settings', async () => {
    const { specFile, weights, files } = outsideSpec();
    let roots = [weights];
    const c = await client({ config: (i) => (i.section === 'weightSpec' ? { roots } : null) });
    // The pull at `initialized` may land after the first check: wait for the re-check.
    const { uri, diagnostics } = await c.open(specFile);
    if (outside(diagnostics) > 0) expect(outside(await within(c.nextDiagnostics(uri)))).toBe(0);
    expect(c.asked.some((i) => i.section === 'weightSpec' && !i.scopeUri)).toBe(true);
    roots = [];
    const next = c.nextDiagnostics(uri);
    c.notify('workspace/didChangeConfiguration', { settings: null });
    expect(outside(await within(next))).toBe(files);
  });

  it("without them a path outside the spec's folder is refused; initializationOptions.weightSpec.roots admits it", async () => {
    const { specFile, weights, files } = outsideSpec();
    const plain = await client({});
    expect(outside((await plain.open(specFile)).diagnostics)).toBe(files);
    const helix = await client({ init: { weightSpec: { roots: [weights] } } });
    expect(outside((await helix.open(specFile)).diagnostics)).toBe(0);
  });
});
