/**
 * "Weight Spec: Run": a short input flow (token ids, then max new tokens, then for a VLM export
 * the images) and the result where people look for it — the "Weight Spec" output channel, with
 * the input ids, the generated ids, time to first token and tokens/s (from the CLI's stats
 * line), revealed without taking focus. An options object (`inputIds`, `maxNewTokens`,
 * `images`) skips the prompts (scripts, tests).
 */
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { parseRunStats, parseTokenIds, runArgs, type RunStats } from '../../core/src/editor/cli-args';
import { isSpecFile, VLM_MANIFEST_FILE } from '../../core/src/spec/file-names';
import type { CliRunner, RunResult } from './runner';
import { exportDirOf, pickFolder, targetPath } from './targets';

/** The options that skip the prompts. */
export interface RunCommandOptions {
  inputIds: number[];
  maxNewTokens: number;
  images: string[];
}

/** What Run resolves to: the CLI's result, its stdout as `text`, and the parsed stats. */
export type RunCommandResult = (RunResult & { text: string; stats?: RunStats; target: string }) | undefined;

/** Generated tokens when the user does not say otherwise (the CLI's own default). */
const DEFAULT_MAX_NEW_TOKENS = 8;
/** Last answers, per run target, offered again as the next defaults. */
const last = new Map<string, { ids: string; max: string }>();

/** The folder holding vlm.json for `dir` itself or for one of its graph folders (vision/, language/). */
export function vlmRoot(dir: string): string | undefined {
  for (const d of [dir, path.dirname(dir)]) if (fs.existsSync(path.join(d, VLM_MANIFEST_FILE))) return d;
  return undefined;
}

/** A VLM prompt's images: picked files in prompt order, [] for text only; undefined when the user backs out. */
export async function askImages(title: string): Promise<string[] | undefined> {
  const pick = await vscode.window.showQuickPick(
    [
      { label: '$(file-media) Pick image(s)…', images: true },
      { label: '$(comment) Text only', images: false },
    ],
    { title, ignoreFocusOut: true },
  );
  if (!pick) return undefined;
  if (!pick.images) return [];
  const files = await vscode.window.showOpenDialog({
    title: 'Images for the prompt (in prompt order)',
    canSelectMany: true,
    canSelectFiles: true,
    canSelectFolders: false,
    filters: { Images: ['png', 'jpg', 'jpeg'] },
  });
  return files?.length ? files.map((f) => f.fsPath) : undefined;
}

/** Asks for what is missing; undefined when the user backs out. */
async function askInputs(target: string, vlm: boolean, o: Partial<RunCommandOptions>): Promise<RunCommandOptions | undefined> {
  const steps = vlm ? 3 : 2;
  const prev = last.get(target);
  let inputIds = o.inputIds;
  if (!inputIds) {
    const text = await vscode.window.showInputBox({
      title: `Run ${path.basename(target)} (1/${steps}): token ids to feed`,
      prompt: 'Comma- or space-separated token ids of the prompt',
      placeHolder: '1, 15, 7',
      value: prev?.ids ?? '',
      ignoreFocusOut: true,
      validateInput: (v) => (parseTokenIds(v) ? undefined : 'comma-separated non-negative integers'),
    });
    if (text === undefined) return undefined;
    inputIds = parseTokenIds(text);
    if (!inputIds) return undefined;
  }
  let maxNewTokens = o.maxNewTokens;
  if (maxNewTokens === undefined) {
    const text = await vscode.window.showInputBox({
      title: `Run ${path.basename(target)} (2/${steps}): max new tokens`,
      prompt: 'How many tokens to generate',
      value: prev?.max ?? String(DEFAULT_MAX_NEW_TOKENS),
      ignoreFocusOut: true,
      validateInput: (v) => (/^\s*\d+\s*$/.test(v) && Number(v) >= 1 && Number(v) <= 100_000 ? undefined : 'a whole number from 1'),
    });
    if (text === undefined) return undefined;
    maxNewTokens = Number(text.trim());
  }
  let images = o.images;
  if (!images && vlm) {
    images = await askImages(`Run ${path.basename(target)} (3/${steps}): images for the prompt`);
    if (!images) return undefined;
  }
  last.set(target, { ids: inputIds.join(', '), max: String(maxNewTokens) });
  return { inputIds, maxNewTokens, images: images ?? [] };
}

/**
 * What Run (and Run Prompt) runs for the command's argument (a spec, an export folder, a bound
 * .onnx; asked for when none): the VLM export folder for a graph folder of one, else the export
 * folder, else the file itself.
 */
export async function runTargetOf(arg: unknown): Promise<{ runTarget: string; vlm: boolean } | undefined> {
  let target = targetPath(arg);
  if (!target) target = await pickFolder('Compiled export folder to run');
  if (!target) return undefined;
  const dir = target.endsWith('.onnx') && !isSpecFile(target) ? undefined : exportDirOf(target);
  const vlm = dir ? vlmRoot(dir) : undefined;
  return { runTarget: vlm ?? dir ?? target, vlm: vlm !== undefined };
}

/** The Run command (see the module comment). */
export async function runCommand(runner: CliRunner, arg: unknown, o: Partial<RunCommandOptions>): Promise<RunCommandResult> {
  const t = await runTargetOf(arg);
  if (!t) return undefined;
  const { runTarget, vlm } = t;
  const inputs = await askInputs(runTarget, vlm, o);
  if (!inputs) return undefined;
  const args = runArgs({
    target: runTarget,
    inputIds: inputs.inputIds,
    maxNewTokens: inputs.maxNewTokens,
    ...(inputs.images.length ? { images: inputs.images } : {}),
  });
  const r = await runner.run(`Running ${path.basename(runTarget)}`, args, { needOrt: true, announce: false, cwd: path.dirname(runTarget) });
  if (!r) return undefined;
  const text = r.stdout.trim();
  const stats = parseRunStats(r.stderr);
  if (r.ok) {
    const log = runner.log;
    log.info(`run ${runTarget}`);
    log.info(`  input ids:           ${inputs.inputIds.join(', ')}`);
    if (inputs.images.length) log.info(`  images:              ${inputs.images.join(', ')}`);
    log.info(`  output ids:          ${text.split(',').join(', ')}`);
    if (stats) {
      log.info(`  time to first token: ${stats.ttftMs.toFixed(1)} ms`);
      log.info(`  tokens/s:            ${stats.tokensPerSecond.toFixed(1)} (${stats.tokens} tokens)`);
    }
    log.show(true);
  }
  return { ...r, text: r.stdout, target: runTarget, ...(stats ? { stats } : {}) };
}
