/**
 * "Weight Spec: Run Prompt…" (also a code lens on a compiled export's spec): asks for a chat
 * message (the model's chat template) or a plain prompt, for a VLM export the images, then
 * runs `weight-spec run --chat/--prompt` and streams the answer's text into the "Weight Spec:
 * Answers" output channel as the CLI prints it. The progress notification's Cancel stops the
 * run (the CLI is killed; it writes nothing). An options object (`text`, `mode`, `system`,
 * `images`, `maxNewTokens`) skips the prompts (scripts, tests).
 */
import path from 'node:path';
import * as vscode from 'vscode';
import { parseRunStats, runPromptArgs, type RunPromptOptions, type RunStats } from '../../core/src/editor/cli-args';
import type { CliRunner, RunResult } from './runner';
import { askImages, runTargetOf } from './run-flow';

/** The options that skip the prompts. */
export type RunPromptCommandOptions = Omit<RunPromptOptions, 'target'>;

/** What Run Prompt resolves to: the CLI's result, the answer's text as streamed, the stats. */
export type RunPromptResult = (RunResult & { answer: string; streamed: string[]; stats?: RunStats; target: string }) | undefined;

/** Where answers go: one channel for the session, revealed without taking focus. */
let answers: vscode.OutputChannel | undefined;
const channel = () => (answers ??= vscode.window.createOutputChannel('Weight Spec: Answers'));

/** Last answers per target, offered again. */
const last = new Map<string, { mode: 'chat' | 'prompt'; text: string }>();

async function askPrompt(target: string, vlm: boolean, o: Partial<RunPromptCommandOptions>): Promise<RunPromptCommandOptions | undefined> {
  const name = path.basename(target);
  const prev = last.get(target);
  let mode = o.mode;
  if (!mode) {
    const pick = await vscode.window.showQuickPick(
      [
        { label: "$(comment-discussion) Chat message (the model's chat template)", mode: 'chat' as const },
        { label: '$(edit) Plain prompt (tokenized as written)', mode: 'prompt' as const },
      ],
      { title: `Run prompt on ${name}: how to send the text`, ignoreFocusOut: true },
    );
    if (!pick) return undefined;
    mode = pick.mode;
  }
  let text = o.text;
  if (text === undefined) {
    text = await vscode.window.showInputBox({
      title: `Run prompt on ${name}: ${mode === 'chat' ? 'your message' : 'the prompt'}`,
      prompt: 'The answer streams into the "Weight Spec: Answers" output',
      value: prev?.mode === mode ? prev.text : '',
      ignoreFocusOut: true,
      validateInput: (v) => (v.trim() ? undefined : 'some text'),
    });
    if (text === undefined) return undefined;
  }
  let images = o.images;
  if (!images && vlm) {
    images = await askImages(`Run prompt on ${name}: images for the prompt`);
    if (!images) return undefined;
  }
  last.set(target, { mode, text });
  return {
    mode,
    text,
    ...(o.system ? { system: o.system } : {}),
    images: images ?? [],
    ...(o.maxNewTokens ? { maxNewTokens: o.maxNewTokens } : {}),
  };
}

/** The Run Prompt command (see the module comment). */
export async function runPromptCommand(runner: CliRunner, arg: unknown, o: Partial<RunPromptCommandOptions>): Promise<RunPromptResult> {
  const t = await runTargetOf(arg);
  if (!t) return undefined;
  const inputs = await askPrompt(t.runTarget, t.vlm, o);
  if (!inputs) return undefined;
  const out = channel();
  out.show(true);
  out.appendLine(`▶ ${path.basename(t.runTarget)} (${inputs.mode}): ${inputs.text}`);
  const streamed: string[] = [];
  const r = await runner.run(`Answering on ${path.basename(t.runTarget)}`, runPromptArgs({ target: t.runTarget, ...inputs }), {
    needOrt: true,
    announce: false,
    cwd: path.dirname(t.runTarget),
    onStdout: (chunk) => {
      streamed.push(chunk);
      out.append(chunk);
    },
  });
  if (!r) return undefined;
  const stats = parseRunStats(r.stderr);
  if (r.cancelled) out.appendLine('\n[cancelled]');
  else if (!r.ok) out.appendLine(`[failed: ${(r.errorLine ?? `exit code ${r.code}`).replace(/^weight-spec: /, '')}]`);
  else if (stats) out.appendLine(`(${stats.tokens} tokens, ${stats.tokensPerSecond.toFixed(1)} tokens/s)`);
  out.appendLine('');
  return { ...r, answer: r.stdout.replace(/\n$/, ''), streamed, target: t.runTarget, ...(stats ? { stats } : {}) };
}
