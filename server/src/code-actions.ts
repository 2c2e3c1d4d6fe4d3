/**
 * Quick fixes from the data core attaches to problems: `key-missing` → replace the key with a
 * suggested one; `key-in-other-file` → set `location.file` to the file that holds the key;
 * `name-not-in-onnx` → replace the name with a suggested graph input; `not-prepared` → run
 * Prepare. Edits are computed
 * on the current parse, so a fix never lands on a stale range.
 */
import { CodeActionKind, type CodeAction, type Diagnostic, type TextEdit } from 'vscode-languageserver/node';
import type { TextDocument } from 'vscode-languageserver-textdocument';
import type { CheckRun } from '../../core/src/check';
import { CLIENT_COMMANDS, SERVER_COMMANDS } from '../../core/src/protocol';
import { DIAGNOSTIC_SOURCE, rangeOf, type DiagnosticData } from './diagnostics';
import { samePath } from './spec-target';

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/** The input index a problem path (`["inputs", i, …]`) is about. */
function inputOf(path: unknown): number | undefined {
  return Array.isArray(path) && path[0] === 'inputs' && typeof path[1] === 'number' ? path[1] : undefined;
}

/**
 * Quick fixes for the given diagnostics of `doc`. `not-prepared` offers Prepare (the lens's
 * command: the extension's when `clientCommands`, else the server's workspace/executeCommand).
 */
export function codeActions(doc: TextDocument, run: CheckRun, diagnostics: Diagnostic[], clientCommands = true): CodeAction[] {
  const { spec, sources, offsets } = run.parsed;
  if (!spec || !sources) return [];
  const out: CodeAction[] = [];
  const fix = (title: string, d: Diagnostic, edit: TextEdit, preferred: boolean) =>
    out.push({ title, kind: CodeActionKind.QuickFix, diagnostics: [d], isPreferred: preferred, edit: { changes: { [doc.uri]: [edit] } } });
  for (const d of diagnostics) {
    if (d.source !== DIAGNOSTIC_SOURCE) continue;
    if (d.code === 'not-prepared') {
      const prepare = (clientCommands ? CLIENT_COMMANDS : SERVER_COMMANDS).prepare;
      out.push({
        title: 'Prepare the checkpoint',
        kind: CodeActionKind.QuickFix,
        diagnostics: [d],
        isPreferred: true,
        command: { title: 'Prepare the checkpoint', command: prepare, arguments: [doc.uri] },
      });
      continue;
    }
    const data = (d.data ?? {}) as Partial<DiagnosticData>;
    const i = inputOf(data.path);
    if (i === undefined) continue;
    const src = sources.inputs.at(i);
    const input = spec.inputs[i];
    if (!src || !input) continue;
    const extra = data.data ?? {};
    if (d.code === 'key-missing' && samePath(data.path!, src.key)) {
      const r = offsets.value(src.key);
      if (!r) continue;
      strings(extra.suggestions).forEach((s, k) =>
        fix(`Change key to "${s}"`, d, { range: rangeOf(doc, r), newText: JSON.stringify(s) }, k === 0),
      );
    } else if (d.code === 'key-in-other-file' && typeof extra.file === 'number') {
      const r = offsets.value(src.file);
      if (!r || !samePath(src.file, ['inputs', i, 'location', 'file'])) continue;
      const target = spec.files[extra.file];
      fix(
        `Set location.file to ${extra.file}${target ? ` (${target.path})` : ''}`,
        d,
        { range: rangeOf(doc, r), newText: String(extra.file) },
        true,
      );
    } else if (d.code === 'name-not-in-onnx' && samePath(data.path!, src.name)) {
      const r = offsets.value(src.name);
      if (!r) continue;
      strings(extra.suggestions).forEach((s, k) =>
        fix(`Change name to "${s}"`, d, { range: rangeOf(doc, r), newText: JSON.stringify(s) }, k === 0),
      );
    }
  }
  return out;
}
