/**
 * Problem → LSP Diagnostic: the one place where core's text offsets become LSP ranges
 * (line/character in UTF-16 code units, which is what JavaScript string offsets already are).
 */
import type { Problem, OffsetRange, Severity } from '../../core/src/errors';
import { DiagnosticSeverity, type Diagnostic, type Range } from 'vscode-languageserver/node';
import type { TextDocument } from 'vscode-languageserver-textdocument';
import { escapeControls } from '../../core/src/display';

/** `source` of every diagnostic the server publishes. */
export const DIAGNOSTIC_SOURCE = 'weight-spec';

const SEVERITY: Record<Severity, DiagnosticSeverity> = {
  error: DiagnosticSeverity.Error,
  warning: DiagnosticSeverity.Warning,
  information: DiagnosticSeverity.Information,
  hint: DiagnosticSeverity.Hint,
};

/** The LSP range of a text range of `doc` (clamped to the text; no range → the first character). */
export function rangeOf(doc: TextDocument, r: OffsetRange | undefined): Range {
  const len = doc.getText().length;
  if (!r) return { start: doc.positionAt(0), end: doc.positionAt(Math.min(1, len)) };
  const start = Math.max(0, Math.min(r.start, len));
  const end = Math.max(start, Math.min(r.end, len));
  return { start: doc.positionAt(start), end: doc.positionAt(end) };
}

/** What a diagnostic carries for quick fixes: the problem's JSON path and its data. */
export interface DiagnosticData {
  path: (string | number)[];
  data?: Record<string, unknown>;
}

/** One problem as an LSP diagnostic of `doc`. */
export function toDiagnostic(doc: TextDocument, p: Problem): Diagnostic {
  const data: DiagnosticData = { path: p.path, ...(p.data ? { data: p.data } : {}) };
  return {
    range: rangeOf(doc, p.range),
    severity: SEVERITY[p.severity] ?? DiagnosticSeverity.Error,
    code: p.code,
    source: DIAGNOSTIC_SOURCE,
    message: escapeControls(p.message, true),
    data,
    // A grouped problem (one not-prepared for all shards) points at each place it is about.
    ...(p.related?.length
      ? {
          relatedInformation: p.related.map((r) => ({
            location: { uri: doc.uri, range: rangeOf(doc, r.range) },
            message: escapeControls(r.message, true),
          })),
        }
      : {}),
  };
}

/** The offsets of an LSP range in `doc`. */
export function offsetsOf(doc: TextDocument, r: Range): OffsetRange {
  return { start: doc.offsetAt(r.start), end: doc.offsetAt(r.end) };
}
