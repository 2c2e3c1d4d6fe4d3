/**
 * Formatting = QEfficient's own bytes: `json.dump(spec, indent=2, sort_keys=True)` through
 * core's Python-compatible writer, applied to the document as written (no version change,
 * unknown fields kept). Text that is not valid JSON is left alone.
 */
import type { TextEdit } from 'vscode-languageserver/node';
import type { TextDocument } from 'vscode-languageserver-textdocument';
import { pyJsonDumps } from '../../core/src/spec';

/** The edit that formats `doc`, or [] when it is already formatted or not JSON. */
export function formatDocument(doc: TextDocument, insertFinalNewline = false): TextEdit[] {
  const text = doc.getText();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return [];
  }
  let out = pyJsonDumps(value, { indent: 2, sortKeys: true });
  if (insertFinalNewline) out += '\n';
  if (out === text) return [];
  return [{ range: { start: doc.positionAt(0), end: doc.positionAt(text.length) }, newText: out }];
}
