/**
 * Issue 50, items 1–3 in a real VS Code, through VS Code's own provider commands (what F12, the
 * suggest widget and a reader of the spec's paths use): Go to Definition on a key lands on the
 * shard that holds its tensor and F12 opens it in the checkpoint viewer; completion while
 * typing a key offers the keys of every shard, not only the input's own; and after export →
 * prepare the spec's own `files[].path` resolve on disk, so F12 from the prepared spec opens a
 * shard of the prepared folder. The checkpoint headers are read here, independently of core.
 */
import * as assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { api, cli, codeOf, safetensorsHeader, waitForDiagnostics, workspace } from './helpers';

/** The definitions at `at` (the server answers once it has checked the document: asked again, each a full round trip). */
async function definitions(uri: vscode.Uri, at: vscode.Position): Promise<vscode.Uri[]> {
  let got: vscode.Uri[] = [];
  for (let i = 0; i < 20 && got.length === 0; i++) {
    const defs = ((await vscode.commands.executeCommand('vscode.executeDefinitionProvider', uri, at)) ?? []) as (
      vscode.Location | vscode.LocationLink
    )[];
    got = defs.map((d) => ('targetUri' in d ? d.targetUri : d.uri));
  }
  return got;
}

describe('navigation from a spec (issue 50)', () => {
  const ws = workspace();
  const shards = ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'];

  before(async () => {
    await api();
  });

  afterEach(async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  it('F12 on a key gives the shard that holds its tensor and opens it in the checkpoint viewer', async () => {
    const uri = vscode.Uri.file(ws.badSpec);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc);
    await waitForDiagnostics(uri, (d) => d.some((x) => codeOf(x) === 'key-missing'));
    const holder = shards.find((s) => ws.goodKey in safetensorsHeader(path.join(ws.llama, s)))!;
    const at = doc.positionAt(doc.getText().indexOf(JSON.stringify(ws.goodKey)) + 3);
    const [target, ...more] = await definitions(uri, at);
    assert.ok(target, 'no definition for a key on disk');
    assert.equal(more.length, 0);
    assert.equal(target.fsPath, path.join(ws.llama, holder));
    // F12 itself: the shard opens in the checkpoint viewer (its default editor; the client's
    // middleware has told the viewer which row to scroll to, which the code-server suite sees)
    const editor = await vscode.window.showTextDocument(doc);
    editor.selection = new vscode.Selection(at, at);
    await vscode.commands.executeCommand('editor.action.revealDefinition');
    const opened = async () => {
      const tab = vscode.window.tabGroups.activeTabGroup.activeTab;
      return tab?.input instanceof vscode.TabInputCustom ? tab.input : undefined;
    };
    let input = await opened();
    for (let i = 0; i < 50 && !input; i++) {
      await new Promise((r) => setTimeout(r, 100));
      input = await opened();
    }
    assert.ok(input, `F12 opened ${vscode.window.tabGroups.activeTabGroup.activeTab?.label}, not a viewer`);
    assert.equal(input.uri.fsPath, path.join(ws.llama, holder));
    assert.match(input.viewType, /safetensors/i);
    // the misspelt key has no tensor: no definition
    const bad = doc.positionAt(doc.getText().indexOf(JSON.stringify(ws.badKey)) + 3);
    assert.deepEqual(await definitions(uri, bad).then((d) => d.map(String)), []);
  });

  it('completion inside a key offers a key of the other shard (every shard of the checkpoint)', async () => {
    // A key that only the second shard holds, typed up to its last '.', in an input of files[0].
    const first = safetensorsHeader(path.join(ws.llama, shards[0]!));
    const second = Object.keys(safetensorsHeader(path.join(ws.llama, shards[1]!)));
    const key = second.find((k) => !(k in first) && k.includes('.'))!;
    assert.ok(key, 'the second shard holds no key of its own');
    const typed = key.slice(0, key.lastIndexOf('.') + 1);
    const file = path.join(ws.dir, 'shards.weight_spec.json');
    const spec = {
      files: shards.map((s) => ({ format: 'safetensors', path: `llama/${s}` })),
      inputs: [{ location: { file: 0, key: typed }, name: 'typed' }],
      model_name: 'tiny-llama',
      version: 5,
    };
    fs.writeFileSync(file, JSON.stringify(spec, null, 2));
    try {
      const uri = vscode.Uri.file(file);
      const doc = await vscode.workspace.openTextDocument(uri);
      await vscode.window.showTextDocument(doc);
      await waitForDiagnostics(uri, (d) => d.some((x) => codeOf(x) === 'key-missing'));
      const text = doc.getText();
      const at = doc.positionAt(text.indexOf(`"key": "${typed}"`) + `"key": "${typed}`.length);
      let labels: string[] = [];
      for (let i = 0; i < 20 && !labels.includes(key); i++) {
        const list = (await vscode.commands.executeCommand('vscode.executeCompletionItemProvider', uri, at, '.')) as vscode.CompletionList;
        labels = list.items.map((it) => (typeof it.label === 'string' ? it.label : it.label.label));
      }
      assert.ok(labels.includes(key), `completion of "${typed}" lacks ${key} (of ${shards[1]}): ${JSON.stringify(labels.slice(0, 20))}`);
    } finally {
      fs.rmSync(file, { force: true });
    }
  });

  it("after export → prepare --spec, the spec's own file paths resolve, and F12 opens a shard of the prepared folder", async () => {
    // A checkpoint of its own: other suites prepare ws.llama, and an export links a prepared
    // folder that already exists, so the "before prepare" state needs a folder never prepared.
    const model = path.join(ws.dir, 'nav-model');
    fs.mkdirSync(model, { recursive: true });
    for (const f of fs.readdirSync(ws.llama))
      if (fs.statSync(path.join(ws.llama, f)).isFile()) fs.copyFileSync(path.join(ws.llama, f), path.join(model, f));
    const dir = path.join(ws.dir, 'nav-export');
    cli(['export', '--config', model, '--out', dir]);
    const specFile = path.join(dir, 'weight_spec.json');
    const paths = (JSON.parse(fs.readFileSync(specFile, 'utf8')) as { files: { path: string }[] }).files.map((f) => f.path);
    assert.ok(paths.length > 0);
    assert.ok(!paths.some((p) => fs.existsSync(path.join(dir, p))), 'a file resolved before prepare');
    cli(['prepare', '--checkpoint', model, '--dtype', 'float32', '--spec', specFile]);
    for (const p of paths) assert.ok(fs.statSync(path.join(dir, p)).isFile(), `${p} does not resolve from ${dir} after prepare`);
    const uri = vscode.Uri.file(specFile);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc);
    const key = '"model.norm.weight"';
    const at = doc.positionAt(doc.getText().indexOf(`"key": ${key}`) + `"key": `.length + 3);
    const [target] = await definitions(uri, at);
    assert.ok(target, 'no definition for a key of the prepared checkpoint');
    const real = fs.realpathSync(target.fsPath);
    assert.ok(
      paths.some((p) => fs.realpathSync(path.join(dir, p)) === real),
      `F12 went to ${target.fsPath}, not a shard the spec names (${paths.join(', ')})`,
    );
    assert.ok('model.norm.weight' in safetensorsHeader(real), `${real} does not hold model.norm.weight`);
  });
});
