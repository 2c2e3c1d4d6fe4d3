import * as assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import * as vscode from 'vscode';
import { api, cli, codeOf, REPO, waitForDiagnostics, workspace } from './helpers';

/** pngjs (a dependency of the project, untyped), loaded from the checkout. */
type PngCtor = { new (o: { width: number; height: number }): { data: Buffer }; sync: { write(p: { data: Buffer }): Buffer } };
const { PNG } = createRequire(path.join(REPO, 'package.json'))('pngjs') as { PNG: PngCtor };

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

  it('Run on a VLM export passes the picked images (--image) and returns the reference tokens, with the stats', async function () {
    this.timeout(300_000);
    const fx = path.join(path.dirname(path.dirname(ws.reference)), 'qwen3_vl_moe');
    const ref = JSON.parse(fs.readFileSync(path.join(fx, 'reference.json'), 'utf8')) as {
      input_ids: number[];
      generated_ids: number[];
      image: number[][][];
    };
    const root = path.join(ws.dir, 'vlm');
    const model = path.join(root, 'model');
    fs.mkdirSync(model, { recursive: true });
    for (const f of ['config.json', 'model.safetensors']) fs.copyFileSync(path.join(fx, f), path.join(model, f));
    // As core/test/vlm/vlm-cli.test.ts: min_pixels below 16·16 keeps the fixture image's size.
    fs.writeFileSync(
      path.join(model, 'preprocessor_config.json'),
      JSON.stringify({ min_pixels: 64, max_pixels: 1 << 20, image_mean: [0.5, 0.5, 0.5], image_std: [0.5, 0.5, 0.5] }),
    );
    const out = path.join(root, 'out');
    cli(['export', '--config', model, '--out', out]);
    cli(['prepare', '--checkpoint', model, '--dtype', 'float32']);
    cli(['compile', out]);
    const H = ref.image.length;
    const W = ref.image[0]!.length;
    const png = new PNG({ width: W, height: H });
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        for (let c = 0; c < 3; c++) png.data[(y * W + x) * 4 + c] = ref.image[y]![x]![c]!;
        png.data[(y * W + x) * 4 + 3] = 255;
      }
    }
    const image = path.join(root, 'image.png');
    fs.writeFileSync(image, PNG.sync.write(png));
    // Run on the language graph's spec: the flow runs the VLM export it belongs to.
    const spec = vscode.Uri.file(path.join(out, 'language', 'weight_spec.json'));
    const r = (await vscode.commands.executeCommand('weightSpec.run', spec, {
      inputIds: ref.input_ids,
      maxNewTokens: ref.generated_ids.length,
      images: [image],
    })) as {
      ok: boolean;
      text?: string;
      target?: string;
      errorLine?: string;
      stats?: { tokens: number; ttftMs: number; tokensPerSecond: number };
    };
    assert.ok(r?.ok, r?.errorLine);
    assert.equal(r.target, out);
    assert.equal(r.text?.trim(), ref.generated_ids.join(','));
    assert.equal(r.stats?.tokens, ref.generated_ids.length);
    assert.ok(r.stats!.ttftMs > 0 && r.stats!.tokensPerSecond > 0, JSON.stringify(r.stats));
  });
});
