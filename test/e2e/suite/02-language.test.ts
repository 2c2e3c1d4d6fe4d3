import * as assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { CLIENT_COMMANDS, SERVER_COMMANDS } from '../../../core/src/protocol';
import { api, cli, codeOf, hoverText, safetensorsHeader, serverPath, waitForDiagnostics, workspace } from './helpers';

describe('language server in VS Code', () => {
  const ws = workspace();
  const bad = vscode.Uri.file(ws.badSpec);

  before(async function () {
    const server = serverPath();
    if (!fs.existsSync(server)) throw new Error(`${server} is missing: the language server is not built`);
    await api();
  });

  it('a spec with a misspelt key gets a key-missing diagnostic on the key string', async () => {
    const doc = await vscode.workspace.openTextDocument(bad);
    await vscode.window.showTextDocument(doc);
    assert.equal(doc.languageId, 'weight-spec');
    const diags = await waitForDiagnostics(bad, (d) => d.some((x) => codeOf(x) === 'key-missing'));
    const d = diags.find((x) => codeOf(x) === 'key-missing')!;
    assert.equal(d.severity, vscode.DiagnosticSeverity.Error);
    assert.equal(doc.getText(d.range), JSON.stringify(ws.badKey));
    assert.ok(d.message.includes(ws.badKey), d.message);
    // The good key right above it is not flagged.
    const goodAt = doc.getText().indexOf(JSON.stringify(ws.goodKey));
    assert.ok(!diags.some((x) => x.range.contains(doc.positionAt(goodAt + 2))), 'the existing key is flagged');
  });

  it('a spec in a folder never opened gets its key-missing diagnostic too (workspace diagnostics)', async () => {
    const closed = vscode.Uri.file(ws.closedSpec);
    const diags = await waitForDiagnostics(closed, (d) => d.some((x) => codeOf(x) === 'key-missing'));
    assert.ok(
      diags.some((x) => x.message.includes(ws.badKey)),
      JSON.stringify(diags.map((x) => x.message)),
    );
    assert.ok(!vscode.workspace.textDocuments.some((d) => d.uri.toString() === closed.toString()), 'the closed spec was never opened');
  });

  it('hover on a key shows its dtype and shape from the safetensors header', async () => {
    const doc = await vscode.workspace.openTextDocument(bad);
    const at = doc.positionAt(doc.getText().indexOf(JSON.stringify(ws.goodKey)) + 3);
    const hovers = (await vscode.commands.executeCommand('vscode.executeHoverProvider', bad, at)) as vscode.Hover[];
    const text = hoverText(hovers);
    const t = safetensorsHeader(path.join(ws.llama, 'model-00001-of-00002.safetensors'))[ws.goodKey]!;
    assert.ok(text.includes(t.dtype), `hover has no dtype ${t.dtype}: ${text}`);
    const shape = t.shape.join('[^0-9]+');
    assert.match(text, new RegExp(`${shape}`), `hover has no shape ${JSON.stringify(t.shape)}: ${text}`);
  });

  it('accepting a completion inside a key (the suggest widget) leaves valid JSON with the complete key', async () => {
    // A key of the shard whose prefix matches no other key, typed up to that prefix.
    const shard = 'llama/model-00001-of-00002.safetensors';
    const keys = Object.keys(safetensorsHeader(path.join(ws.dir, shard))).filter((k) => k !== '__metadata__');
    const unique = (k: string) => k.slice(0, -4);
    const key = keys.find((k) => k.length > 12 && keys.filter((o) => o.includes(unique(k))).length === 1);
    assert.ok(key, `no key with a unique prefix among ${keys.length}`);
    const typed = unique(key);
    const file = path.join(ws.dir, 'completion.weight_spec.json');
    const spec = {
      files: [{ format: 'safetensors', path: shard }],
      inputs: [{ location: { file: 0, key: typed }, name: key }],
      model_name: 'tiny-llama',
      version: 5,
    };
    fs.writeFileSync(file, JSON.stringify(spec, null, 2));
    const uri = vscode.Uri.file(file);
    const doc = await vscode.workspace.openTextDocument(uri);
    const editor = await vscode.window.showTextDocument(doc);
    await waitForDiagnostics(uri, (d) => d.some((x) => codeOf(x) === 'key-missing')); // the server has checked it
    const line = doc
      .getText()
      .split('\n')
      .findIndex((l) => l.includes(`"key": "${typed}"`));
    const at = new vscode.Position(line, doc.lineAt(line).text.indexOf(typed) + typed.length);
    const before = doc.getText();
    // The suggest widget has no event to await: trigger, give it time, accept; again if nothing was inserted.
    for (let attempt = 1; attempt <= 8 && doc.getText() === before; attempt++) {
      editor.selection = new vscode.Selection(at, at);
      await vscode.commands.executeCommand('editor.action.triggerSuggest');
      await new Promise((r) => setTimeout(r, 400 * attempt));
      await vscode.commands.executeCommand('acceptSelectedSuggestion');
    }
    try {
      assert.equal(doc.lineAt(line).text.trim(), `"key": "${key}"`);
      assert.deepEqual(JSON.parse(doc.getText()), { ...spec, inputs: [{ location: { file: 0, key }, name: key }] });
      await waitForDiagnostics(uri, (d) => !d.some((x) => codeOf(x) === 'key-missing'));
    } finally {
      await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
    }
  });

  it('code lenses offer Prepare checkpoint, Compile and Inspect ONNX, invoking our commands with the spec', async () => {
    const dir = path.join(ws.dir, 'lens-export');
    cli(['export', '--config', ws.llama, '--out', dir]);
    const uri = vscode.Uri.file(path.join(dir, 'weight_spec.json'));
    await vscode.window.showTextDocument(uri);
    const want = ['Prepare checkpoint', 'Inspect ONNX'];
    let lenses: vscode.CodeLens[] = [];
    // The server answers code-lens requests itself; a request sent before it has the document
    // open can come back empty, so ask again (each attempt is a full round trip, no timer).
    for (let i = 0; i < 20; i++) {
      lenses = ((await vscode.commands.executeCommand('vscode.executeCodeLensProvider', uri, 10)) as vscode.CodeLens[]) ?? [];
      const titles = lenses.map((l) => l.command?.title ?? '');
      if (want.every((w) => titles.some((t) => t.includes(w))) && titles.some((t) => /Compile|Re-run compile/.test(t))) break;
    }
    const titles = lenses.map((l) => l.command?.title ?? '');
    for (const w of want)
      assert.ok(
        titles.some((t) => t.includes(w)),
        `no "${w}" lens in ${JSON.stringify(titles)}`,
      );
    assert.ok(
      titles.some((t) => /Compile|Re-run compile/.test(t)),
      `no Compile lens in ${JSON.stringify(titles)}`,
    );
    const ours = lenses.filter((l) => l.command?.command.startsWith('weightSpec.'));
    assert.ok(ours.length >= 3, `lenses invoke ${JSON.stringify(lenses.map((l) => l.command?.command))}`);
    for (const l of ours) {
      const arg = l.command!.arguments?.[0] as vscode.Uri | string | undefined;
      const p =
        arg instanceof vscode.Uri
          ? arg.fsPath
          : typeof arg === 'string'
            ? arg.startsWith('file:')
              ? vscode.Uri.parse(arg).fsPath
              : arg
            : '';
      assert.ok(p.startsWith(dir), `${l.command!.command} gets ${String(arg)}`);
    }
    // vscode-languageclient registers the server's own commands (its executeCommandProvider, for
    // other editors) beside the extension's: distinct ids, so both sets are there.
    const all = await vscode.commands.getCommands(true);
    for (const id of [...Object.values(CLIENT_COMMANDS), ...Object.values(SERVER_COMMANDS)])
      assert.ok(all.includes(id), `${id} is not registered`);
  });
});
