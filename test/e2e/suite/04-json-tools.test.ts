// How JSON tools apply to weight specs (issue 36 item 10; README "JSON tools"). By default a
// spec is the weight-spec language: the language server gives what VS Code's JSON support would
// (schema errors, an outline grouped by layer) and formats to QEfficient's bytes (sorted keys,
// indent 2), so one outline, one formatter, one parse. A user who wants their JSON formatter,
// `[json]` settings and JSON extensions sets `files.associations` to json — as package.json is
// JSON with the npm features on top — and keeps every feature of the server, plus the schema
// that `jsonValidation` contributes.
import * as assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { api, codeOf, waitForDiagnostics, workspace } from './helpers';

describe('JSON tools on weight specs', () => {
  const ws = workspace();
  before(async () => {
    await api();
  });
  after(async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  const write = (name: string, spec: unknown) => {
    const file = path.join(ws.dir, name);
    fs.writeFileSync(file, JSON.stringify(spec));
    return file;
  };
  const good = {
    files: [{ format: 'safetensors', path: 'llama/model-00001-of-00002.safetensors' }],
    inputs: [{ location: { file: 0, key: ws.goodKey }, name: ws.goodKey }],
    version: 5,
  };
  const format = (uri: vscode.Uri) =>
    vscode.commands.executeCommand<vscode.TextEdit[] | undefined>('vscode.executeFormatDocumentProvider', uri, {
      tabSize: 4,
      insertSpaces: true,
    });

  it("a weight-spec document: one formatter (QEfficient's bytes), one outline, the schema's errors", async () => {
    const file = write('compact.weight_spec.json', { version: 5, inputs: good.inputs, files: good.files });
    const doc = await vscode.workspace.openTextDocument(file);
    await vscode.window.showTextDocument(doc);
    assert.equal(doc.languageId, 'weight-spec');
    // The server answers once it has the document (it starts with the extension).
    let edits: vscode.TextEdit[] | undefined;
    for (const t0 = Date.now(); !edits?.length && Date.now() - t0 < 60_000;) {
      edits = await format(doc.uri);
      if (!edits?.length) await new Promise((r) => setTimeout(r, 300));
    }
    assert.ok(edits?.length, 'no formatting edits');
    const we = new vscode.WorkspaceEdit();
    we.set(doc.uri, edits);
    assert.ok(await vscode.workspace.applyEdit(we));
    // Sorted keys and indent 2 whatever the editor's tab size: what QEfficient's json.dump writes.
    assert.equal(doc.getText().trimEnd(), JSON.stringify(good, null, 2));
    const symbols = (await vscode.commands.executeCommand<vscode.DocumentSymbol[]>('vscode.executeDocumentSymbolProvider', doc.uri)) ?? [];
    const names = symbols.map((s) => s.name);
    assert.ok(names.length > 0 && new Set(names).size === names.length, `the outline is doubled or empty: ${JSON.stringify(names)}`);
    await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');

    const broken = write('schema-err.weight_spec.json', { ...good, version: 'five' });
    const bdoc = await vscode.workspace.openTextDocument(broken);
    await vscode.window.showTextDocument(bdoc);
    const diags = await waitForDiagnostics(bdoc.uri, (d) => d.some((x) => codeOf(x) === 'schema'));
    assert.ok(
      diags.some((d) => codeOf(d) === 'schema' && bdoc.getText(d.range) === '"five"'),
      JSON.stringify(diags.map((d) => [codeOf(d), d.message, bdoc.getText(d.range)])),
    );
  });

  it('files.associations → json: the JSON tools apply, and the server keeps checking', async () => {
    const files = vscode.workspace.getConfiguration('files');
    const before = files.inspect<Record<string, string>>('associations')?.workspaceValue;
    await files.update('associations', { ...before, '*.weight_spec.json': 'json' }, vscode.ConfigurationTarget.Workspace);
    try {
      const file = write('user-json.weight_spec.json', { ...good, inputs: [{ location: { file: 0, key: ws.badKey }, name: 'b' }] });
      const doc = await vscode.workspace.openTextDocument(file);
      await vscode.window.showTextDocument(doc);
      assert.equal(doc.languageId, 'json');
      // The server still checks it (the schema through jsonValidation: 03-viewers' plain-JSON test).
      const diags = await waitForDiagnostics(doc.uri, (d) => d.some((x) => codeOf(x) === 'key-missing'));
      const d = diags.find((x) => codeOf(x) === 'key-missing')!;
      assert.equal(doc.getText(d.range), JSON.stringify(ws.badKey));
      assert.ok((await format(doc.uri))?.length, 'no formatter answered for the json document');
    } finally {
      await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
      await files.update('associations', before, vscode.ConfigurationTarget.Workspace);
    }
  });
});
