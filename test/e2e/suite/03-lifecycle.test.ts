import * as assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { api, cli, codeOf, waitForDiagnostics, workspace } from './helpers';

/** Polls `fn` (a cheap read of state the extension keeps) until it holds; `what` names it on timeout. */
async function until(fn: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('extension lifecycle and editor details', () => {
  const ws = workspace();

  it('"Weight Spec: Restart Language Server" replaces the client with a running one that still checks specs', async () => {
    const a = await api();
    const before = a.client();
    assert.ok(before?.isRunning(), 'the language client runs after activation');
    await vscode.commands.executeCommand('weightSpec.restartServer');
    const after = a.client();
    assert.ok(after && after !== before, 'restart made a new client');
    assert.ok(after.isRunning());
    assert.equal(before?.isRunning(), false, 'the old client is stopped');
    const bad = vscode.Uri.file(ws.badSpec);
    await vscode.window.showTextDocument(bad);
    await waitForDiagnostics(bad, (d) => d.some((x) => codeOf(x) === 'key-missing'));
  });

  it('weightSpec.roots is followed both ways: a root added admits a path outside the workspace, removing it refuses the path again', async () => {
    // A spec naming a shard of the shared fixtures by its absolute path: outside the workspace.
    const shard = path.join(path.dirname(ws.reference), 'model-00001-of-00002.safetensors');
    const file = path.join(ws.dir, 'outside.weight_spec.json');
    const spec = {
      files: [{ format: 'safetensors', path: shard }],
      inputs: [{ location: { file: 0, key: ws.goodKey }, name: ws.goodKey }],
      version: 5,
    };
    fs.writeFileSync(file, JSON.stringify(spec, null, 2));
    const uri = vscode.Uri.file(file);
    const outside = (d: readonly vscode.Diagnostic[]) => d.some((x) => codeOf(x) === 'path-outside-root');
    const config = vscode.workspace.getConfiguration('weightSpec');
    try {
      await vscode.window.showTextDocument(uri);
      await waitForDiagnostics(uri, outside);
      await config.update('roots', [path.dirname(shard)], vscode.ConfigurationTarget.Workspace);
      await waitForDiagnostics(uri, (d) => !outside(d));
      // A server started while the root is set, then the root removed: the server must drop it
      // (roots from the settings are replaced on change, never frozen at start).
      await vscode.commands.executeCommand('weightSpec.restartServer');
      await vscode.window.showTextDocument(uri);
      await waitForDiagnostics(uri, (d) => !outside(d));
      await config.update('roots', undefined, vscode.ConfigurationTarget.Workspace);
      await waitForDiagnostics(uri, outside);
    } finally {
      await config.update('roots', undefined, vscode.ConfigurationTarget.Workspace);
      await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
      fs.rmSync(file, { force: true });
    }
  });

  it('the outline groups an exported spec\'s inputs in non-overlapping runs: a layer-0 line sits in "layer 0", not in "other"', async () => {
    const dir = path.join(ws.dir, 'outline-export');
    cli(['export', '--config', ws.llama, '--out', dir]);
    const uri = vscode.Uri.file(path.join(dir, 'weight_spec.json'));
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc);
    let syms: vscode.DocumentSymbol[] = [];
    await until(async () => {
      syms =
        ((await vscode.commands.executeCommand('vscode.executeDocumentSymbolProvider', uri)) as vscode.DocumentSymbol[] | undefined) ?? [];
      return syms.some((s) => s.name === 'inputs');
    }, 'the outline');
    const groups = syms.find((s) => s.name === 'inputs')!.children;
    const line = doc.positionAt(doc.getText().indexOf('"model.layers.0.')).line;
    const around = groups.filter((g) => g.range.start.line <= line && line <= g.range.end.line).map((g) => g.name);
    assert.deepEqual(around, ['layer 0'], `groups: ${JSON.stringify(groups.map((g) => [g.name, g.range.start.line, g.range.end.line]))}`);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  });

  it('"Create Demo Model" writes the tiny Llama into a new folder, which the CLI exports, and never writes into an existing one', async () => {
    const parent = path.join(ws.dir, 'demo-parent');
    fs.mkdirSync(parent);
    const r = (await vscode.commands.executeCommand('weightSpec.createDemoModel', vscode.Uri.file(parent))) as {
      ok: boolean;
      out?: string;
    };
    assert.ok(r?.ok);
    assert.equal(r.out, path.join(parent, 'tiny-llama'));
    const cfg = JSON.parse(fs.readFileSync(path.join(parent, 'tiny-llama', 'config.json'), 'utf8')) as { model_type: string };
    assert.equal(cfg.model_type, 'llama');
    cli(['export', '--config', r.out, '--out', path.join(parent, 'tiny-export')]);
    const before = fs.statSync(path.join(parent, 'tiny-llama', 'config.json')).mtimeMs;
    const again = (await vscode.commands.executeCommand('weightSpec.createDemoModel', vscode.Uri.file(parent))) as {
      ok: boolean;
      errorLine?: string;
    };
    assert.equal(again?.ok, false);
    assert.match(again.errorLine ?? '', /already exists/);
    assert.equal(fs.statSync(path.join(parent, 'tiny-llama', 'config.json')).mtimeMs, before);
  });
});
