import * as assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { api, cli, listFiles, REPO, workspace } from './helpers';

const COMMANDS = [
  'weightSpec.export',
  'weightSpec.prepare',
  'weightSpec.compile',
  'weightSpec.recompile',
  'weightSpec.run',
  'weightSpec.inspect',
];

type Result =
  | {
      ok: boolean;
      out?: string;
      text?: string;
      uri?: string;
      errorLine?: string;
      stderr?: string;
      stats?: { tokens: number; ttftMs: number; tokensPerSecond: number };
    }
  | undefined;

function assertOk(r: Result, what: string): asserts r is NonNullable<Result> {
  assert.ok(r, `${what}: the command returned nothing`);
  assert.ok(r.ok, `${what} failed: ${r.errorLine ?? r.stderr}`);
}

describe('commands and tasks', () => {
  const ws = workspace();
  const exportDir = path.join(ws.dir, 'export-llama');
  const spec = path.join(exportDir, 'weight_spec.json');

  before(async () => {
    await api();
    // compile --backend ort needs onnxruntime-node: the setting points at this checkout's copy.
    await vscode.workspace
      .getConfiguration('weightSpec')
      .update('onnxRuntimePath', path.join(REPO, 'node_modules', 'onnxruntime-node'), vscode.ConfigurationTarget.Workspace);
  });

  it('registers every command', async () => {
    const all = await vscode.commands.getCommands(true);
    for (const c of COMMANDS) assert.ok(all.includes(c), `${c} is not registered`);
  });

  it('the task provider lists export and prepare for the model folder, each running the bundled CLI', async () => {
    const tasks = await vscode.tasks.fetchTasks({ type: 'weight-spec' });
    const byName = new Map(tasks.map((t) => [t.name, t]));
    const exp = byName.get('export llama');
    const prep = byName.get('prepare llama');
    assert.ok(exp && prep, `tasks: ${[...byName.keys()].join(', ')}`);
    const ex = exp.execution as vscode.ProcessExecution;
    assert.ok(ex instanceof vscode.ProcessExecution || 'process' in ex, 'export runs as a process');
    assert.equal(ex.process, process.execPath);
    assert.deepEqual(ex.args, [
      path.join(REPO, 'dist', 'cli.js'),
      'export',
      '--config',
      ws.llama,
      '--out',
      path.join(ws.dir, 'llama-weight-free'),
      '--dtype',
      'float32',
    ]);
    assert.deepEqual((prep.execution as vscode.ProcessExecution).args.slice(1), [
      'prepare',
      '--checkpoint',
      ws.llama,
      '--dtype',
      'float32',
    ]);
    assert.deepEqual(exp.problemMatchers, ['$weight-spec']);
    assert.equal(exp.definition.type, 'weight-spec');
  });

  it('Export on config.json writes what `weight-spec export --config` writes', async () => {
    const r = (await vscode.commands.executeCommand('weightSpec.export', vscode.Uri.file(path.join(ws.llama, 'config.json')), {
      out: exportDir,
    })) as Result;
    assertOk(r, 'export');
    const byCli = path.join(ws.dir, 'cli-export-llama');
    cli(['export', '--config', ws.llama, '--out', byCli, '--dtype', 'float32']);
    assert.deepEqual(listFiles(exportDir), listFiles(byCli));
    assert.ok(
      fs.existsSync(spec) && fs.existsSync(path.join(exportDir, 'model.onnx')) && fs.existsSync(path.join(exportDir, 'export-report.json')),
    );
    assert.equal(fs.readFileSync(spec, 'utf8'), fs.readFileSync(path.join(byCli, 'weight_spec.json'), 'utf8'));
    assert.ok(
      fs.readFileSync(path.join(exportDir, 'model.onnx')).equals(fs.readFileSync(path.join(byCli, 'model.onnx'))),
      'model.onnx differs from the CLI',
    );
  });

  it('the "Weight Spec" tree shows the export after the Export command: graph, spec, checkpoint (not prepared), compile state', async () => {
    const a = await api();
    await a.rescan();
    const roots = await a.tree();
    const exp = roots.find((r) => r.node.fsPath === spec);
    assert.ok(exp, `tree roots: ${JSON.stringify(roots.map((r) => r.node.fsPath))}`);
    assert.equal(exp.item.label, 'export-llama');
    assert.equal(exp.item.description, 'not prepared');
    assert.equal(exp.item.contextValue, 'weightSpec.export.not-prepared');
    const kids = await a.tree(exp.node);
    assert.deepEqual(
      kids.map((k) => [k.node.kind, String(k.item.label)]),
      [
        ['graph', 'model.onnx'],
        ['spec', 'weight_spec.json'],
        ['checkpoint', 'checkpoint'],
        ['compile', 'compile'],
      ],
    );
    assert.match(String(kids[2]!.item.description), /^not prepared · /);
    assert.equal(kids[3]!.item.description, 'never compiled');
  });

  it("the export's model.onnx is known as weight-free, and the Export menu is hidden on weight-free graphs", async () => {
    const a = await api();
    assert.equal(a.isWeightFree(path.join(exportDir, 'model.onnx')), true);
    // A legacy graph with its weights embedded (the fixture's) keeps the Export menu.
    const legacy = path.join(ws.dir, 'legacy-graph', 'legacy.onnx');
    fs.mkdirSync(path.dirname(legacy), { recursive: true });
    fs.copyFileSync(path.join(path.dirname(ws.reference), 'legacy.onnx'), legacy);
    await a.rescan();
    assert.equal(a.isWeightFree(legacy), false);
    assert.equal(a.isWeightFree(path.join(exportDir, 'model.onnx')), true);
    const pkg = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as {
      contributes: { menus: Record<string, { command: string; when?: string }[]> };
    };
    const when = pkg.contributes.menus['explorer/context']!.find((m) => m.command === 'weightSpec.export')!.when!;
    assert.match(when, /!\(resourcePath in weightSpec\.weightFreeGraphs\)/);
  });

  it('Compile before Prepare stops at "not prepared" without looking for ONNX Runtime or running the CLI', async () => {
    const r = (await vscode.commands.executeCommand('weightSpec.compile', vscode.Uri.file(spec), { backend: 'ort' })) as Result;
    assert.ok(r && !r.ok, 'compile of an unprepared export must fail');
    assert.match(r.errorLine ?? '', /is not prepared \(no \.checkpoint_prepared\); run Prepare first/);
    assert.equal(r.stderr, '', 'the CLI must not have run');
    assert.ok(!fs.existsSync(path.join(exportDir, 'compile.json')));
  });

  it('the status bar shows "not prepared" for the exported spec and opens Prepare', async () => {
    await vscode.window.showTextDocument(vscode.Uri.file(spec));
    const s = (await api()).status();
    assert.match(s.text, /Weight Spec: not prepared/);
    assert.equal(s.visibleCommand, 'weightSpec.prepare');
  });

  it('Prepare on the spec prepares its source checkpoint as `weight-spec prepare` does', async () => {
    const report = JSON.parse(fs.readFileSync(path.join(exportDir, 'export-report.json'), 'utf8')) as { prepared: { dir: string } };
    const r = (await vscode.commands.executeCommand('weightSpec.prepare', vscode.Uri.file(spec).toString())) as Result;
    assertOk(r, 'prepare');
    const prepared = report.prepared.dir;
    assert.ok(fs.existsSync(path.join(prepared, '.checkpoint_prepared')), `${prepared} has no sentinel`);
    const byCli = path.join(ws.dir, 'cli-prepared');
    cli(['prepare', '--checkpoint', ws.llama, '--dtype', 'float32', '--out', byCli]);
    assert.deepEqual(listFiles(prepared), listFiles(byCli));
    for (const f of listFiles(byCli).filter((n) => n.endsWith('.safetensors'))) {
      assert.ok(fs.readFileSync(path.join(prepared, f)).equals(fs.readFileSync(path.join(byCli, f))), `${f} differs from the CLI's`);
    }
    assert.match((await api()).status().text, /Weight Spec: prepared/);
  });

  it('Compile (ort) binds the export and records compile.json', async () => {
    const r = (await vscode.commands.executeCommand('weightSpec.compile', vscode.Uri.file(spec), { backend: 'ort' })) as Result;
    assertOk(r, 'compile');
    const rec = JSON.parse(fs.readFileSync(path.join(exportDir, 'compile.json'), 'utf8')) as {
      backend: string;
      artifacts: { model?: string };
    };
    assert.equal(rec.backend, 'ort');
    assert.ok(rec.artifacts.model && fs.existsSync(rec.artifacts.model), `artifact ${rec.artifacts.model} missing`);
    assert.match((await api()).status().text, /Weight Spec: compiled/);
    const a = await api();
    await a.rescan();
    const exp = (await a.tree()).find((r) => r.node.fsPath === spec)!;
    assert.equal(exp.item.description, 'compiled');
    const kids = await a.tree(exp.node);
    assert.equal(kids.find((k) => k.node.kind === 'compile')!.item.description, 'up to date (ort)');
    // The checkpoint expands to the prepared tensors by layer (headers read through core).
    const ck = kids.find((k) => k.node.kind === 'checkpoint')!;
    assert.match(String(ck.item.description), /^prepared · /);
    const layers = await a.tree(ck.node);
    assert.deepEqual(
      layers.map((l) => String(l.item.label)),
      ['layer 0', 'layer 1', 'other'],
    );
    const layer0 = await a.tree(layers[0]!.node);
    assert.ok(
      layer0.length > 3 && layer0.every((t) => String(t.item.label).startsWith('model.layers.0.')),
      JSON.stringify(layer0.map((t) => t.item.label)),
    );
    assert.match(String(layer0[0]!.item.description), /^(F32|BF16|F16) \[\d+(, \d+)*\]$/);
    // The CLI compiling its own export against its own prepared copy builds the same files.
    const cliPrepared = path.join(ws.dir, 'cli-prepared');
    const before = listFiles(cliPrepared);
    cli(['compile', path.join(ws.dir, 'cli-export-llama'), '--backend', 'ort', '--prepared', cliPrepared]);
    const prepared = path.dirname(rec.artifacts.model);
    // Artifact names carry a hash of their inputs (whose paths differ between the two exports).
    const shape = (d: string) => listFiles(d).map((f) => f.replace(/[0-9a-f]{12}(?=\.onnx$)/, '<hash>'));
    assert.deepEqual(shape(prepared), shape(cliPrepared));
    assert.ok(listFiles(cliPrepared).length > before.length, 'compile added files to the prepared dir');
  });

  it('Run feeds token ids and returns the greedy tokens of the reference, with time to first token and tokens/s', async () => {
    const ref = JSON.parse(fs.readFileSync(ws.reference, 'utf8')) as { input_ids: number[]; generated_ids: number[] };
    const n = ref.generated_ids.length;
    const r = (await vscode.commands.executeCommand('weightSpec.run', vscode.Uri.file(spec), {
      inputIds: ref.input_ids,
      maxNewTokens: n,
    })) as Result;
    assertOk(r, 'run');
    assert.equal(r.text?.trim(), ref.generated_ids.join(','));
    assert.ok(r.stats, `no stats parsed from the CLI's stderr: ${r.stderr}`);
    assert.equal(r.stats.tokens, n);
    assert.ok(r.stats.ttftMs > 0 && r.stats.tokensPerSecond > 0, JSON.stringify(r.stats));
  });

  it("the tree's items run the actions: Run on the export item, Inspect on its graph item", async () => {
    const a = await api();
    await a.rescan();
    const exp = (await a.tree()).find((r) => r.node.fsPath === spec)!;
    assert.equal(exp.item.contextValue, 'weightSpec.export.compiled');
    const ref = JSON.parse(fs.readFileSync(ws.reference, 'utf8')) as { input_ids: number[]; generated_ids: number[] };
    const r = (await vscode.commands.executeCommand('weightSpec.run', exp.node, { inputIds: ref.input_ids, maxNewTokens: 2 })) as Result;
    assertOk(r, 'run from the tree');
    assert.equal(r.text?.trim(), ref.generated_ids.slice(0, 2).join(','));
    const graph = (await a.tree(exp.node)).find((k) => k.node.kind === 'graph')!;
    assert.equal(graph.item.contextValue, 'weightSpec.graph');
    const i = (await vscode.commands.executeCommand('weightSpec.inspect', graph.node)) as Result;
    assertOk(i, 'inspect from the tree');
    assert.equal(i.text, cli(['inspect', path.join(exportDir, 'model.onnx')]));
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    // The menus offer exactly these on such items.
    const pkg = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as {
      contributes: { menus: Record<string, { command: string; when?: string; group?: string }[]> };
    };
    const inline = pkg.contributes.menus['view/item/context']!.filter((m) => m.group?.startsWith('inline'));
    const offered = (viewItem: string) =>
      inline
        .filter((m) =>
          new RegExp(/viewItem =~ \/(.*)\/$/.exec(m.when!)?.[1] ?? `^${/viewItem == (\S+)/.exec(m.when!)?.[1]}$`).test(viewItem),
        )
        .map((m) => m.command);
    assert.deepEqual(offered('weightSpec.export.compiled'), ['weightSpec.run']);
    assert.deepEqual(offered('weightSpec.export.not-prepared'), ['weightSpec.prepare']);
    assert.deepEqual(offered('weightSpec.graph'), ['weightSpec.inspect']);
  });

  it('saving the spec with only a trailing newline added keeps it "compiled" (the spec counts by content)', async () => {
    const doc = await vscode.workspace.openTextDocument(spec);
    await vscode.window.showTextDocument(doc);
    const original = fs.readFileSync(spec, 'utf8');
    const edit = new vscode.WorkspaceEdit();
    edit.insert(doc.uri, doc.positionAt(doc.getText().length), '\n');
    assert.ok(await vscode.workspace.applyEdit(edit));
    assert.ok(await doc.save(), 'saved');
    assert.ok(fs.readFileSync(spec, 'utf8').endsWith('\n'));
    (await api()).status(); // the save refreshed the status from disk
    assert.match((await api()).status().text, /Weight Spec: compiled/);
    const lenses = ((await vscode.commands.executeCommand('vscode.executeCodeLensProvider', doc.uri)) as vscode.CodeLens[]) ?? [];
    const titles = lenses.map((l) => l.command?.title ?? '');
    assert.ok(!titles.some((t) => t.includes('stale')), `a lens says stale: ${JSON.stringify(titles)}`);
    // Back to the exported bytes (a later test compares them with the export task's).
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    fs.writeFileSync(spec, original);
  });

  it('the task provider offers compile for the export folder', async () => {
    const tasks = await vscode.tasks.fetchTasks({ type: 'weight-spec' });
    const t = tasks.find((x) => x.name === 'compile export-llama');
    assert.ok(t, `tasks: ${tasks.map((x) => x.name).join(', ')}`);
    const ex = t.execution as vscode.ProcessExecution;
    assert.deepEqual(ex.args.slice(1), ['compile', exportDir, '--backend', 'ort']);
    assert.equal(ex.options?.env?.WEIGHT_SPEC_ORT_PATH, path.join(REPO, 'node_modules', 'onnxruntime-node'));
  });

  it('running the provided export task (a ProcessExecution of the CLI) exits 0 and writes the export', async () => {
    const task = (await vscode.tasks.fetchTasks({ type: 'weight-spec' })).find((t) => t.name === 'export llama');
    assert.ok(task);
    const out = path.join(ws.dir, 'llama-weight-free');
    const ended = new Promise<number | undefined>((resolve) => {
      const sub = vscode.tasks.onDidEndTaskProcess((e) => {
        if (e.execution.task.name !== 'export llama') return;
        sub.dispose();
        resolve(e.exitCode);
      });
    });
    await vscode.tasks.executeTask(task);
    assert.equal(await ended, 0);
    assert.equal(fs.readFileSync(path.join(out, 'weight_spec.json'), 'utf8'), fs.readFileSync(spec, 'utf8'));
  });

  it('Inspect shows the tensors of a safetensors file', async () => {
    const shard = path.join(ws.llama, 'model-00001-of-00002.safetensors');
    const r = (await vscode.commands.executeCommand('weightSpec.inspect', vscode.Uri.file(shard))) as Result;
    assertOk(r, 'inspect');
    assert.ok(r.text?.includes(ws.goodKey), 'the table lists model.embed_tokens.weight');
    assert.equal(r.text, cli(['inspect', shard]));
    const doc = vscode.window.activeTextEditor?.document;
    assert.ok(doc?.getText().includes(ws.goodKey), 'the table is shown in an editor');
    assert.ok(doc);
    // A read-only document of its own scheme: not Untitled, not dirty, nothing to save.
    assert.equal(doc.uri.scheme, 'weight-spec-inspect');
    assert.equal(doc.uri.toString(), r.uri);
    assert.equal(doc.isUntitled, false);
    assert.equal(doc.isDirty, false);
    assert.ok(doc.uri.path.endsWith('model-00001-of-00002.safetensors.inspect.txt'), doc.uri.path);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    assert.equal(vscode.workspace.textDocuments.filter((d) => d.isDirty).length, 0, 'a dirty document is left');
  });
});
