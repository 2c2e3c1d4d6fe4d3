/**
 * Document symbols: the top-level fields, `files`, and `inputs` grouped by layer
 * (`…layers.N.…`, `…h.N.…`, `…blocks.N.…`), so the outline of a 20 000-input spec stays navigable.
 */
import { SymbolKind, type DocumentSymbol } from 'vscode-languageserver/node';
import type { TextDocument } from 'vscode-languageserver-textdocument';
import type { OffsetRange } from '../../core/src/errors';
import type { ParsedSpec } from '../../core/src/spec';
import { rangeOf } from './diagnostics';

const LAYER = /(?:^|\.)(?:layers|h|blocks|layer)\.(\d+)\./;

/** The layer number a parameter name belongs to, if any. */
export function outlineLayerOf(name: string): number | undefined {
  const m = LAYER.exec(name);
  return m ? Number(m[1]) : undefined;
}

function span(ranges: OffsetRange[]): OffsetRange {
  return { start: Math.min(...ranges.map((r) => r.start)), end: Math.max(...ranges.map((r) => r.end)) };
}

/** The outline of a parsed spec (empty when it did not parse). */
export function documentSymbols(doc: TextDocument, parsed: ParsedSpec): DocumentSymbol[] {
  const { spec, sources, offsets } = parsed;
  if (!spec || !sources) return [];
  const out: DocumentSymbol[] = [];
  const sym = (
    name: string,
    kind: SymbolKind,
    r: OffsetRange,
    sel: OffsetRange,
    detail?: string,
    children?: DocumentSymbol[],
  ): DocumentSymbol => ({
    name: name || '(empty)',
    kind,
    range: rangeOf(doc, r),
    selectionRange: rangeOf(doc, sel),
    ...(detail ? { detail } : {}),
    ...(children ? { children } : {}),
  });
  for (const k of ['version', 'model_name', 'model_id']) {
    const r = offsets.value([k]);
    const kr = offsets.key([k]);
    if (r && kr) out.push(sym(k, SymbolKind.Property, { start: kr.start, end: r.end }, kr, String(spec[k] ?? '')));
  }
  const filesKey = offsets.key([sources.files[0]?.node[0] ?? 'files']);
  const fileSyms = spec.files.map((f, j) => {
    const src = sources.files[j]!;
    const r = offsets.value(src.node) ?? offsets.value(src.path)!;
    return sym(f.path, SymbolKind.File, r, offsets.value(src.path) ?? r, `files[${j}] · ${f.format}`);
  });
  const filesRange = offsets.value([sources.files[0]?.node[0] ?? 'files']);
  if (filesRange && filesKey)
    out.push(sym('files', SymbolKind.Array, { start: filesKey.start, end: filesRange.end }, filesKey, `${spec.files.length}`, fileSyms));

  // Groups are runs of consecutive inputs, so no group's range spans another's: the sorted
  // spec has lm_head before the layers and model.norm after them, and one "other" group
  // around both would enclose every layer line (the breadcrumb then shows "other" there).
  const runs: { name: string; items: DocumentSymbol[]; ranges: OffsetRange[] }[] = [];
  for (const [i, input] of spec.inputs.entries()) {
    const src = sources.inputs.at(i)!;
    const r = offsets.value(src.node);
    if (!r) continue;
    const sel = offsets.value(src.name) ?? r;
    const layer = outlineLayerOf(input.name);
    const name = layer === undefined ? 'other' : `layer ${layer}`;
    let run = runs[runs.length - 1];
    if (!run || run.name !== name) runs.push((run = { name, items: [], ranges: [] }));
    const detail =
      input.location.key === input.name ? `files[${input.location.file}]` : `${input.location.key} · files[${input.location.file}]`;
    run.items.push(sym(input.name, SymbolKind.Field, r, sel, detail));
    run.ranges.push(r);
  }
  const seen = new Map<string, number>();
  for (const run of runs) seen.set(run.name, (seen.get(run.name) ?? 0) + 1);
  const nth = new Map<string, number>();
  const inputsKey = offsets.key(['inputs']);
  const inputsRange = offsets.value(['inputs']);
  if (inputsKey && inputsRange) {
    const children = runs.map((g) => {
      const r = span(g.ranges);
      const k = (nth.get(g.name) ?? 0) + 1;
      nth.set(g.name, k);
      // A name that comes back (other inputs before and after the layers) is numbered.
      const name = seen.get(g.name)! > 1 ? `${g.name} (${k})` : g.name;
      return sym(name, SymbolKind.Namespace, r, { start: r.start, end: r.start + 1 }, `${g.items.length} inputs`, g.items);
    });
    out.push(
      sym('inputs', SymbolKind.Array, { start: inputsKey.start, end: inputsRange.end }, inputsKey, `${spec.inputs.length}`, children),
    );
  }
  return out;
}
