import * as assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { qwen3MoeTensors, writeSparseCheckpoint } from '../../support/sparse-checkpoint.mjs';
import { api, cli, codeOf, workspace } from './helpers';

/** What the viewer of `file` rendered (its webview's text), once `pred` holds. */
async function rendered(file: string, view: 'page' | 'graph', pred: (text: string) => boolean, timeoutMs = 60_000): Promise<string> {
  const t0 = Date.now();
  let last = '';
  while (Date.now() - t0 < timeoutMs) {
    const r = (await vscode.commands.executeCommand('weightSpec.viewers.renderedText', file)) as
      { page?: string; graph?: string } | undefined;
    last = r?.[view] ?? '';
    if (pred(last)) return last;
    await new Promise((res) => setTimeout(res, 250));
  }
  throw new Error(
    `the viewer of ${file} did not render the expected ${view} within ${timeoutMs / 1000} s; it shows: ${last.slice(0, 800)}`,
  );
}

function activeCustomTab(): vscode.TabInputCustom | undefined {
  const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
  return input instanceof vscode.TabInputCustom ? input : undefined;
}

/** The safetensors header's keys, read here without core. */
function headerKeys(file: string): string[] {
  const buf = fs.readFileSync(file);
  const n = Number(buf.readBigUInt64LE(0));
  return Object.keys(JSON.parse(buf.subarray(8, 8 + n).toString('utf8'))).filter((k) => k !== '__metadata__');
}

describe('viewers for model files', () => {
  const ws = workspace();

  before(async () => {
    await api();
  });

  after(async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  it('a .safetensors shard opens in the safetensors viewer (default editor) with every tensor of its checkpoint and a total', async () => {
    const shard = path.join(ws.llama, 'model-00002-of-00002.safetensors');
    await vscode.commands.executeCommand('vscode.open', vscode.Uri.file(shard));
    assert.equal(activeCustomTab()?.viewType, 'weightSpec.safetensorsViewer');
    const keys = [...headerKeys(path.join(ws.llama, 'model-00001-of-00002.safetensors')), ...headerKeys(shard)];
    const text = await rendered(shard, 'page', (t) => t.includes('total:'));
    assert.ok(text.includes(`${keys.length} tensors`), text.slice(0, 400));
    assert.ok(text.includes('model-00001-of-00002.safetensors') && text.includes('sharded checkpoint'), text.slice(0, 400));
    assert.match(text, new RegExp(`total: ${keys.length} tensors, \\d+ bytes`));
    // Rows of both shards are drawn (the fixture is small enough to show whole).
    for (const k of keys) assert.ok(text.includes(k), `${k} is not shown`);
    // The workspace spec reads the good key from shard 1: the row links to its input.
    assert.ok(text.includes('inputs[0]'), 'no link to the spec input that uses the key');
    assert.ok(text.includes('Used by bad.weight_spec.json') || text.includes('bad.weight_spec.json'), text.slice(0, 600));
  });

  it("an export's model.onnx opens in the ONNX viewer with the inspect summary and the embedded spec", async () => {
    // A copy of the model: ws.llama's prepared checkpoint may exist already (01-commands prepares
    // it), and this test needs one that does not.
    const model = path.join(ws.dir, 'viewer-llama');
    fs.mkdirSync(model, { recursive: true });
    for (const f of fs.readdirSync(ws.llama)) {
      if (fs.statSync(path.join(ws.llama, f)).isFile()) fs.copyFileSync(path.join(ws.llama, f), path.join(model, f));
    }
    const out = path.join(ws.dir, 'viewer-export');
    cli(['export', '--config', model, '--out', out, '--dtype', 'float32']);
    const onnx = path.join(out, 'model.onnx');
    // Plain `vscode.open` (what a click in the explorer runs): the viewer is the default editor of *.onnx.
    await vscode.commands.executeCommand('vscode.open', vscode.Uri.file(onnx));
    assert.equal(activeCustomTab()?.viewType, 'weightSpec.onnxViewer');
    const text = await rendered(onnx, 'page', (t) => t.includes('Embedded weight spec'));
    for (const want of [
      'IR version',
      'Inputs',
      'input_ids',
      'batch_size',
      'seq_len',
      'Outputs',
      'logits',
      'layer 0:',
      'layer 1:',
      'Metadata',
      'com.qti.aisw.extdata',
      'Op types',
    ]) {
      assert.ok(text.includes(want), `the page lacks ${JSON.stringify(want)}: ${text.slice(0, 600)}`);
    }
    const spec = JSON.parse(fs.readFileSync(path.join(out, 'weight_spec.json'), 'utf8'));
    assert.ok(text.includes(`${spec.inputs.length} inputs`), 'the embedded spec summary lacks its input count');
    // Its prepared checkpoint does not exist yet: the spec's problems say so.
    assert.ok(text.includes('not-prepared'), 'the embedded spec problems are not shown');
  });

  it('a generated 20,000-tensor checkpoint (16 sparse shards, 60 GB declared) opens whole from any shard', async () => {
    const dir = path.join(ws.dir, 'sparse-20k');
    const tensors = qwen3MoeTensors({ layers: 51 });
    const { totalBytes } = writeSparseCheckpoint(dir, tensors, 16);
    const shard = path.join(dir, 'model-00007-of-00016.safetensors');
    await vscode.commands.executeCommand('vscode.open', vscode.Uri.file(shard));
    const text = await rendered(shard, 'page', (t) => t.includes('total:'));
    assert.ok(text.includes(`${tensors.length} tensors`), text.slice(0, 300));
    assert.ok(text.includes(`total: ${tensors.length} tensors, ${totalBytes} bytes`), text.slice(0, 300));
    // Only the rows in view exist: the first tensors, not the last.
    assert.ok(text.includes(tensors[0]!.key) && !text.includes('lm_head.weight'), 'the table is not virtualized');
  });

  it('an unreadable file shows one line saying what is wrong', async () => {
    const bad = path.join(ws.dir, 'broken.safetensors');
    fs.writeFileSync(bad, Buffer.from([0xff, 0xff, 0, 0, 0, 0, 0, 0, 0x7b]));
    await vscode.commands.executeCommand('vscode.open', vscode.Uri.file(bad));
    const text = await rendered(bad, 'page', (t) => t.includes('broken.safetensors'));
    assert.equal(text.trim().split('\n').length, 1, text);
    assert.match(text, /broken\.safetensors: header length 65535 runs past the end/);
  });

  it('the JSON schema (jsonValidation) flags a broken spec opened as plain JSON', async () => {
    const file = path.join(ws.dir, 'as-json.weight_spec.json');
    fs.writeFileSync(
      file,
      JSON.stringify(
        { files: [{ path: 'a.safetensors' }], inputs: [{ location: { file: -1, key: 'k' }, name: 'n' }], version: 'five' },
        null,
        2,
      ),
    );
    const doc = await vscode.languages.setTextDocumentLanguage(await vscode.workspace.openTextDocument(file), 'json');
    await vscode.window.showTextDocument(doc);
    const uri = doc.uri;
    const t0 = Date.now();
    let diags: readonly vscode.Diagnostic[] = [];
    while (Date.now() - t0 < 60_000) {
      diags = vscode.languages.getDiagnostics(uri).filter((d) => d.source === 'json' || d.source === undefined);
      if (diags.length >= 2) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    const at = (d: vscode.Diagnostic) => doc.getText(d.range);
    assert.ok(
      diags.some((d) => at(d) === '"five"'),
      `no schema diagnostic on version: ${JSON.stringify(diags.map((d) => [codeOf(d), d.source, d.message, at(d)]))}`,
    );
    assert.ok(
      diags.some((d) => at(d) === '-1'),
      `no schema diagnostic on the negative file index: ${JSON.stringify(diags.map((d) => [d.message, at(d)]))}`,
    );
  });
});
