/**
 * Inlay hints: the checkpoint dtype and shape after each key (only for the requested range,
 * found by binary search, so a 20 000-input spec costs what is on screen).
 */
import { InlayHintKind, type InlayHint } from 'vscode-languageserver/node';
import type { TextDocument } from 'vscode-languageserver-textdocument';
import type { CheckRun } from '../../core/src/check';
import type { OffsetRange } from '../../core/src/errors';
import { shapeText, tensorOf } from './spec-target';

/** Hints for the inputs whose key lies in `range`. */
export function inlayHints(doc: TextDocument, run: CheckRun, range: OffsetRange): InlayHint[] {
  const { spec, sources, offsets } = run.parsed;
  if (!spec || !sources) return [];
  const n = spec.inputs.length;
  // First input that ends at or after the range start.
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const r = offsets.value(sources.inputs.at(mid)!.node);
    if (r && r.end < range.start) lo = mid + 1;
    else hi = mid;
  }
  const hints: InlayHint[] = [];
  for (let i = lo; i < n; i++) {
    const node = offsets.value(sources.inputs.at(i)!.node);
    if (!node || node.start > range.end) break;
    const key = offsets.value(sources.inputs.at(i)!.key);
    if (!key || key.end < range.start || key.end > range.end) continue;
    const hit = tensorOf(run, i);
    if (!hit) continue;
    hints.push({
      position: doc.positionAt(key.end),
      label: `${hit.info.dtype} ${shapeText(hit.info.shape)}`,
      kind: InlayHintKind.Type,
      paddingLeft: true,
    });
  }
  return hints;
}
