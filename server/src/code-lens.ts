/**
 * Code lenses at the top of a spec: "Prepare checkpoint", "Compile" (never compiled / stale)
 * or "Re-run compile" (up to date), "Inspect ONNX", and once compiled "Run prompt…" (the
 * extension's; other clients have no input box for it). They invoke the extension's commands (or the
 * server's, for other clients) with the spec's URI (Inspect with the companion ONNX's URI, which is what it inspects).
 */
import { pathToFileURL } from 'node:url';
import type { CodeLens } from 'vscode-languageserver/node';
import type { CheckRun } from '../../core/src/check';
import { CLIENT_COMMANDS, PREPARE_LENS_OPTIONS, SERVER_COMMANDS, type CompileInfo } from '../../core/src/protocol';

const STATE_TEXT: Record<CompileInfo['state'], string> = {
  'never-compiled': 'never compiled',
  'up-to-date': 'up to date',
  stale: 'stale',
};

/**
 * The lenses of a spec at `uri`: with the extension's commands when the client runs them
 * (`clientCommands`), else with the server's own (workspace/executeCommand, same arguments).
 */
export function codeLenses(uri: string, compile: CompileInfo | undefined, run: CheckRun | undefined, clientCommands = true): CodeLens[] {
  const COMMANDS = clientCommands ? CLIENT_COMMANDS : SERVER_COMMANDS;
  const range = { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } };
  const lens = (title: string, command: string, ...args: unknown[]): CodeLens => ({ range, command: { title, command, arguments: args } });
  // The extension's Prepare confirms the dtype when a lens starts it; the server's takes the spec's.
  const out = [lens('Prepare checkpoint', COMMANDS.prepare, uri, ...(clientCommands ? [PREPARE_LENS_OPTIONS] : []))];
  if (compile) {
    const changed = compile.state === 'stale' && compile.changed?.length ? `: ${compile.changed.join(', ')} changed` : '';
    out.push(
      compile.state === 'up-to-date'
        ? lens(`Re-run compile (${STATE_TEXT[compile.state]})`, COMMANDS.recompile, uri)
        : lens(`Compile (${STATE_TEXT[compile.state]}${changed})`, COMMANDS.compile, uri),
    );
  }
  const onnx = run?.onnx?.file;
  out.push(lens('Inspect ONNX', COMMANDS.inspect, onnx ? pathToFileURL(onnx).toString() : uri));
  // asking for a prompt needs the extension's input box: no server command stands for it
  if (clientCommands && compile?.state === 'up-to-date') out.push(lens('Run prompt…', CLIENT_COMMANDS.runPrompt, uri));
  return out;
}
