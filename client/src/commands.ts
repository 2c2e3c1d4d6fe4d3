/**
 * The command palette / explorer / code-lens commands. Each takes the target as first argument
 * (Uri, file: URI string or path; the active editor's file otherwise) and, optionally, an
 * options object that skips the prompts (used by scripts and tests). All work is done by the
 * bundled CLI; each command resolves to its RunResult (or undefined when the user backed out).
 */
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import {
  compileArgs,
  exportArgs,
  parseExpertParallel,
  prepareArgs,
  prepareDtypeChoices,
  type Backend,
  type ExportOptions,
  type PrepareOptions,
} from '../../core/src/editor/cli-args';
import { isPrepareDtype } from '../../core/src/formats/dtype';
import type { PrepareLensOptions } from '../../core/src/protocol';
import type { CliRunner, RunResult } from './runner';
import { settings } from './settings';
import { compileBlocker, isSpecFile, specInfo } from '../../core/src/editor/spec-state';
import { outsideConfirmation, prepareTargets } from '../../core/src/editor/workspace-trust';
import type { InspectDocuments } from './inspect-document';
import { runCommand, type RunCommandOptions } from './run-flow';
import { runPromptCommand, type RunPromptCommandOptions } from './prompt-flow';
import { listCachedModels } from '../../core/src/editor/cached-models';
import { insideHubCache, modelHome } from '../../core/src/hub/hf-cache';
import { formatBytes } from '../../core/src/display';
import { linkPreparedFolder } from '../../core/src/artifacts/prepared-link';
import { exportDirOf, isDir, optionsArg, pickFile, pickFolder, readConfig, specOf, targetPath, vlmSpecs } from './targets';

const LAST_EXPORT = 'weightSpec.lastExport';

/** Called after every command so the status bar can re-read the state. */
export type AfterRun = () => void;

export type CommandResult = (RunResult & { out?: string; text?: string; uri?: string }) | undefined;

/** Registers weightSpec.export/prepare/compile/recompile/run/inspect. */
export function registerCommands(
  context: vscode.ExtensionContext,
  runner: CliRunner,
  inspectDocs: InspectDocuments,
  after: AfterRun,
): void {
  const reg = (id: string, fn: (arg?: unknown, opt?: unknown) => Promise<CommandResult>) =>
    context.subscriptions.push(
      vscode.commands.registerCommand(id, async (arg?: unknown, opt?: unknown) => {
        try {
          return await fn(arg, opt);
        } catch (e) {
          const msg = e instanceof Error ? e.message : String(e);
          runner.log.error(`${id}: ${msg}`);
          void vscode.window.showErrorMessage(`Weight Spec: ${msg}`);
          return undefined;
        } finally {
          after();
        }
      }),
    );
  reg('weightSpec.export', (a, o) => exportCommand(context, runner, a, optionsArg<ExportOptions>(o)));
  reg('weightSpec.prepare', (a, o) => prepareCommand(runner, a, optionsArg<PrepareOptions & PrepareLensOptions>(o)));
  reg('weightSpec.compile', (a, o) => compileCommand(runner, a, optionsArg<{ backend: Backend; prepared: string }>(o), false));
  reg('weightSpec.recompile', (a, o) => compileCommand(runner, a, optionsArg<{ backend: Backend; prepared: string }>(o), true));
  reg('weightSpec.run', (a, o) => runCommand(runner, a, optionsArg<RunCommandOptions>(o)));
  reg('weightSpec.runPrompt', (a, o) => runPromptCommand(runner, a, optionsArg<RunPromptCommandOptions>(o)));
  reg('weightSpec.inspect', (a) => inspectCommand(runner, inspectDocs, a));
}

async function exportCommand(
  context: vscode.ExtensionContext,
  runner: CliRunner,
  arg: unknown,
  o: Partial<ExportOptions>,
): Promise<CommandResult> {
  const last = context.workspaceState.get<{ mode: 'config' | 'onnx'; source: string; checkpoint?: string; out: string }>(LAST_EXPORT);
  let source = o.config ?? o.onnx ?? targetPath(arg, false);
  if (source && !isDir(source) && path.basename(source) !== 'config.json' && !source.endsWith('.onnx')) {
    throw new Error(`export needs a model folder, its config.json or a legacy .onnx, not ${source}`);
  }
  if (!source) {
    const mode = await vscode.window.showQuickPick(
      [
        { label: 'From a model folder (config.json)', mode: 'config' as const },
        { label: 'From an ONNX file with weights + its checkpoint folder', mode: 'onnx' as const },
      ].sort((a, b) => (a.mode === last?.mode ? -1 : b.mode === last?.mode ? 1 : 0)),
      { title: 'Weight Spec: Export Weight-Free ONNX' },
    );
    if (!mode) return undefined;
    source =
      mode.mode === 'config'
        ? await pickModel(last?.mode === 'config' ? last.source : undefined)
        : await pickFile('Legacy ONNX with embedded weights', { ONNX: ['onnx'] }, last?.mode === 'onnx' ? last.source : undefined);
    if (!source) return undefined;
  }
  const isOnnx = source.endsWith('.onnx') && !isDir(source);
  const modelDir = isOnnx ? path.dirname(source) : isDir(source) ? source : path.dirname(source);
  if (!isOnnx && !fs.existsSync(path.join(modelDir, 'config.json'))) throw new Error(`${modelDir} has no config.json`);
  let checkpoint = o.checkpoint;
  if (isOnnx && !checkpoint) {
    checkpoint = await pickFolder('Checkpoint folder (safetensors) the ONNX weights come from', last?.checkpoint ?? modelDir);
    if (!checkpoint) return undefined;
  }
  // a snapshot of the Hugging Face cache is named by its repo, and nothing is written beside it in the cache
  const home = modelHome(modelDir);
  const stem = isOnnx ? path.basename(source, '.onnx') : home.name;
  const outBase = insideHubCache(modelDir) ? (vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? home.parent) : path.dirname(modelDir);
  const defaultOut = last && last.source === source ? last.out : path.join(outBase, `${stem}-weight-free`);
  const out =
    o.out ??
    (await vscode.window.showInputBox({
      title: 'Output folder for model.onnx and weight_spec.json',
      value: defaultOut,
      ignoreFocusOut: true,
    }));
  if (!out) return undefined;
  const s = settings(vscode.Uri.file(modelDir));
  const dtype = o.dtype ?? (s.defaultDtype === 'float16' ? 'float16' : 'float32');
  const args = exportArgs(
    isOnnx ? { onnx: source, checkpoint: checkpoint!, out } : { config: modelDir, out, dtype, ...(o.ctxLen ? { ctxLen: o.ctxLen } : {}) },
  );
  await context.workspaceState.update(LAST_EXPORT, {
    mode: isOnnx ? 'onnx' : 'config',
    source,
    ...(checkpoint ? { checkpoint } : {}),
    out,
  });
  const r = await runner.run(`Exporting ${stem}`, args, { cwd: modelDir });
  if (r?.ok && o.out === undefined) {
    // a VLM export is two graphs (vlm.json + vision/ + language/): show both specs
    const outAbs = path.resolve(modelDir, out);
    const specs = vlmSpecs(outAbs) ?? [path.join(outAbs, 'weight_spec.json')];
    // One after the other, each awaited: a second open while the first is still opening in the
    // same group cancels it, and the unawaited promise then logged "Could NOT open editor" in
    // the extension host (issue 50). A failure is a line in the log, not an unhandled rejection.
    for (const [i, f] of specs.filter((x) => fs.existsSync(x)).entries()) {
      await vscode.window.showTextDocument(vscode.Uri.file(f), { preview: specs.length === 1, preserveFocus: i > 0 }).then(
        () => undefined,
        (e: unknown) => runner.log.warn(`could not open ${f}: ${e instanceof Error ? e.message : String(e)}`),
      );
    }
  }
  return r && { ...r, out: path.resolve(modelDir, out) };
}

async function prepareCommand(runner: CliRunner, arg: unknown, o: Partial<PrepareOptions> & PrepareLensOptions): Promise<CommandResult> {
  const target = o.checkpoint ?? targetPath(arg);
  let checkpoint: string | undefined;
  let out = o.out;
  let dtype = o.dtype;
  if (target && isSpecFile(target) && !o.checkpoint) {
    const info = specInfo(target);
    // --checkpoint and --out come from export-report.json, a file anyone may have written:
    // resolved against it, and a path outside the workspace needs the user's yes.
    const roots = [...(vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath), ...settings(vscode.Uri.file(target)).roots];
    const targets = prepareTargets(target, roots);
    const ask = outsideConfirmation('Prepare', o.out ? targets.outside.filter((v) => v !== targets.out) : targets.outside);
    if (ask) {
      const allow = await vscode.window.showWarningMessage(ask.message, { modal: true, detail: ask.detail }, 'Use them');
      if (allow !== 'Use them') return undefined;
    }
    checkpoint = targets.checkpoint?.abs;
    out ??= targets.out?.abs;
    if (!dtype && isPrepareDtype(info.dtype)) dtype = info.dtype;
    // No checkpoint recorded: start where the export's model folder is (the report's
    // source.config, confined to the workspace), not in the export folder.
    if (!checkpoint)
      checkpoint = await pickFolder('Source checkpoint (safetensors) to prepare for this spec', targets.pickFrom ?? info.dir);
  } else if (target) {
    checkpoint = isDir(target) ? target : path.dirname(target);
  } else {
    checkpoint = await pickFolder('Checkpoint folder (safetensors) to prepare');
  }
  if (!checkpoint) return undefined;
  const s = settings(vscode.Uri.file(checkpoint));
  // A lens click (o.confirmDtype) shows the picker with the spec's dtype first instead of
  // preparing in it silently: preparing many GB in the wrong dtype is the costly mistake.
  if (!dtype || (o.confirmDtype && !o.dtype)) {
    const pick = await vscode.window.showQuickPick(prepareDtypeChoices(dtype, s.defaultDtype), {
      title: dtype ? `Prepare: target dtype (the spec's graph expects ${dtype})` : 'Prepare: target dtype',
    });
    if (!pick) return undefined;
    dtype = pick.label;
  }
  let expertParallel = o.expertParallel;
  const cfg = readConfig(checkpoint);
  const experts = cfg && (cfg.num_local_experts ?? cfg.num_experts);
  if (!expertParallel && typeof experts === 'number' && experts > 1 && Object.keys(o).every((k) => k === 'confirmDtype')) {
    const text = await vscode.window.showInputBox({
      title: `Expert-parallel packing for ${experts} experts: pipeline stages P, or P/N with N = E / P experts per stage (empty: none)`,
      placeHolder: `e.g. 2 (N = ${experts / 2} derived) or 2/${experts / 2}`,
      validateInput: (v) => {
        if (v.trim() === '') return undefined;
        const ep = parseExpertParallel(v);
        if (!ep || experts % ep.stages !== 0) return `P must divide the ${experts} experts`;
        return ep.experts === undefined || ep.stages * ep.experts === experts ? undefined : `P × N must equal the ${experts} experts`;
      },
    });
    if (text === undefined) return undefined;
    if (text.trim() !== '') expertParallel = parseExpertParallel(text);
  }
  const maxRamGb = o.maxRamGb ?? (s.maxRamGb > 0 ? s.maxRamGb : undefined);
  const args = prepareArgs({
    checkpoint,
    dtype,
    ...(out ? { out } : {}),
    ...(maxRamGb ? { maxRamGb } : {}),
    ...(expertParallel ? { expertParallel } : {}),
  });
  const r = await runner.run(`Preparing ${path.basename(checkpoint)} (${dtype})`, args, { cwd: checkpoint });
  // Prepared for a spec: QEfficient's link from its export to the folder, so the spec's own paths resolve.
  if (r?.ok && out && target && isSpecFile(target)) {
    const l = await linkPreparedFolder(path.dirname(target), out).catch((e: unknown) => ({ skipped: String(e) }));
    if ('linked' in l) {
      if (l.made) runner.log.info(`linked ${l.linked} -> ${out}`);
    } else runner.log.info(`no link to ${out}: ${l.skipped}`);
  }
  return r && { ...r, ...(out ? { out } : {}) };
}

async function compileCommand(
  runner: CliRunner,
  arg: unknown,
  o: Partial<{ backend: Backend; prepared: string }>,
  force: boolean,
): Promise<CommandResult> {
  let target = targetPath(arg);
  if (target && !specOf(target) && !vlmSpecs(target)) {
    if (arg !== undefined) throw new Error(`${target} is not an export folder (no weight_spec.json there)`);
    target = undefined;
  }
  target ??= await pickFolder('Export folder (model.onnx + weight_spec.json) to compile');
  if (!target) return undefined;
  const exportDir = exportDirOf(target);
  const s = settings(vscode.Uri.file(exportDir));
  const backend = o.backend ?? s.compileBackend;
  // An unprepared checkpoint fails the compile anyway: say so before ONNX Runtime is looked
  // for (and its 290 MB download offered).
  const blocked = backend === 'ort' ? compileBlocker(exportDir, o.prepared) : undefined;
  if (blocked) {
    runner.log.error(`compile: ${blocked}`);
    void vscode.window.showErrorMessage(`Weight Spec: ${blocked}.`, 'Prepare').then((b) => {
      const spec = specOf(exportDir);
      if (b && spec) void vscode.commands.executeCommand('weightSpec.prepare', vscode.Uri.file(spec));
    });
    return {
      ok: false,
      code: null,
      signal: null,
      cancelled: false,
      stdout: '',
      stderr: '',
      errorLine: `weight-spec: ${blocked}`,
      out: exportDir,
    };
  }
  const args = compileArgs({ exportDir, backend, ...(o.prepared ? { prepared: o.prepared } : {}), force });
  const r = await runner.run(`${force ? 'Re-compiling' : 'Compiling'} ${path.basename(exportDir)} (${backend})`, args, {
    needOrt: backend === 'ort',
    cwd: exportDir,
  });
  return r && { ...r, out: exportDir };
}

async function inspectCommand(runner: CliRunner, docs: InspectDocuments, arg: unknown): Promise<CommandResult> {
  let file = targetPath(arg);
  if (!file) file = await pickFile('File to inspect', { Tensors: ['safetensors', 'onnx'] });
  if (!file) return undefined;
  const r = await runner.run(`Inspecting ${path.basename(file)}`, ['inspect', file], { announce: false });
  if (!r?.ok) return r && { ...r, text: r.stdout };
  // A read-only document of its own scheme: never dirty, never asks to be saved.
  const doc = await docs.show(file, r.stdout);
  return { ...r, text: r.stdout, uri: doc.uri.toString() };
}

/**
 * The model folder to export from: the models of the user's Hugging Face cache (size,
 * model_type, whether this tool builds that family), or "Browse…" for any folder.
 */
async function pickModel(lastSource: string | undefined): Promise<string | undefined> {
  const cached = listCachedModels();
  if (cached.length === 0) return pickFolder('Model folder with config.json', lastSource);
  type Item = vscode.QuickPickItem & { dir?: string };
  const items: Item[] = [
    ...cached.map((m) => ({
      label: m.id,
      description: `${formatBytes(m.bytes)} · ${m.modelType ?? 'no config.json'} · ${m.supported ? 'supported' : 'not supported'}`,
      detail: `${m.revision === m.commit ? '' : `${m.revision} → `}${m.commit.slice(0, 12)}`,
      dir: m.dir,
    })),
    { label: 'Browse…', description: 'a model folder with config.json' },
  ];
  const pick = await vscode.window.showQuickPick(items, {
    title: 'Weight Spec: Export Model — from the Hugging Face cache or a folder',
    matchOnDescription: true,
  });
  if (!pick) return undefined;
  return pick.dir ?? pickFolder('Model folder with config.json', lastSource);
}
