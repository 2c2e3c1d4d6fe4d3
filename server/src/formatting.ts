/**
 * Formatting = QEfficient's own bytes: `json.dump(spec, indent=2, sort_keys=True)` through
 * core's Python-compatible writer, applied to the document as written (no version change,
 * unknown fields kept). Text that is not valid JSON, or nested deeper than the spec parser
 * accepts (the writer recurses per level), is left alone.
 */
import type { TextEdit } from 'vscode-languageserver/node';
import type { TextDocument } from 'vscode-languageserver-textdocument';
import { nestingBeyond } from '../../core/src/formats/json-depth';
import { MAX_JSON_DEPTH, pyJsonDumps } from '../../core/src/spec';

/** The edit that formats `doc`, or [] when it is already formatted or not JSON. */
export function formatDocument(doc: TextDocument, insertFinalNewline = false): TextEdit[] {
  const text = doc.getText();
  if (nestingBeyond(text, MAX_JSON_DEPTH) >= 0) return [];
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
