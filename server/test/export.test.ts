// A spec written by our own export (node dist/cli.js export on a temp copy of the llama
// fixture, then prepare) opens with zero diagnostics; the Compile lens follows compile.json.
import { SpecStateRequest } from '../../core/src/protocol';
import { execFileSync } from 'node:child_process';
import { appendFileSync, cpSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { CodeLens } from 'vscode-languageserver-protocol';
import { tempDir } from '../../core/test/support/check-helpers';
import { describeFixtures, fixturesDir, REPO_ROOT } from '../../test/support/fixtures';
import { startInMemory, type TestClient } from './harness';
import { bundleServer } from './support';

const cli = (args: string[]) =>
  execFileSync(process.execPath, [path.join(REPO_ROOT, 'dist', 'cli.js'), ...args], { cwd: REPO_ROOT, stdio: 'pipe' }).toString();

describeFixtures('a spec from our own export', () => {
  let client: TestClient;
  let dir: string;
  beforeAll(async () => {
    await bundleServer(REPO_ROOT); // and dist/cli.js when the whole bundle builds
    dir = tempDir('ws-lsp-export-');
    // The prepared checkpoint lands beside its source: work on a copy (fixtures are read-only).
    cpSync(path.join(fixturesDir(), 'llama'), path.join(dir, 'llama'), { recursive: true });
    cli(['export', '--config', path.join(dir, 'llama'), '--out', path.join(dir, 'exp')]);
    cli(['prepare', '--checkpoint', path.join(dir, 'llama'), '--dtype', 'float32']);
    client = await startInMemory();
  });
  afterAll(() => client?.close());

  const lensTitles = async (uri: string) =>
    (await client.request<CodeLens[]>('textDocument/codeLens', { textDocument: { uri } })).map((l) => l.command!.title);

  it('opens with zero diagnostics (checked against its model.onnx)', async () => {
    const spec = path.join(dir, 'exp', 'weight_spec.json');
    const { uri, diagnostics } = await client.open(spec);
    expect(diagnostics).toEqual([]);
    const st = await client.request<{ onnx?: string; inputs: number }>(SpecStateRequest.method, { uri });
    expect(st.onnx).toBe(path.join(dir, 'exp', 'model.onnx'));
    expect(st.inputs).toBeGreaterThan(10);
    expect(await lensTitles(uri)).toEqual(['Prepare checkpoint', 'Compile (never compiled)', 'Inspect ONNX']);
  });

  it('the Compile lens says up to date after compile, stale after the spec changes', async () => {
    const spec = path.join(dir, 'exp', 'weight_spec.json');
    const { uri } = await client.open(spec);
    cli(['compile', path.join(dir, 'exp')]);
    expect((await lensTitles(uri))[1]).toBe('Re-run compile (up to date)');
    // Only a trailing newline: the same content, still up to date (issue 19.6).
    appendFileSync(spec, '\n');
    const later = new Date(Date.now() + 5000);
    utimesSync(spec, later, later);
    expect((await lensTitles(uri))[1]).toBe('Re-run compile (up to date)');
    const edited = JSON.parse(readFileSync(spec, 'utf8')) as Record<string, unknown>;
    writeFileSync(spec, JSON.stringify({ ...edited, model_name: 'edited' }, null, 2));
    expect((await lensTitles(uri))[1]).toBe('Compile (stale: spec changed)');
  });
});
