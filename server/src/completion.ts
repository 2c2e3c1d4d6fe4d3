/**
 * Completion inside `location.key` strings (the keys of the referenced file) and `name`
 * strings (the companion graph's weight inputs). Works on half-typed documents: the cursor's
 * JSON path comes from the check's offset index when it checked this text, else from
 * jsonc-parser's scanner; the candidates come from the last good check.
 */
import { getLocation } from 'jsonc-parser';
import { CompletionItemKind, type CompletionItem, type CompletionList, type TextEdit } from 'vscode-languageserver/node';
import type { TextDocument } from 'vscode-languageserver-textdocument';
import { RUNTIME_INPUT, type CheckRun } from '../../core/src/check';
import type { JsonPath } from '../../core/src/spec';
import { specJsonSchema } from '../../core/src/spec/json-schema';
import { rangeOf } from './diagnostics';
import { shapeText, targetAt } from './spec-target';

/**
 * Items offered at most; past it the list is marked incomplete and VS Code asks again as the
 * user types (candidates are pre-filtered by what is already typed in the string).
 */
const MAX_ITEMS = 1000;

/**
 * The JSON path at `offset` and the string token around it. When `run` is the check of this
 * very text, an input's key or name is found by binary search in its offset index; otherwise
 * (half-typed text, or the cursor elsewhere) jsonc-parser scans the text from its start, which
 * costs tens of milliseconds in a 20 000-input spec.
 */
function cursorAt(
  text: string,
  run: CheckRun,
  current: boolean,
  offset: number,
): { path: JsonPath; atKey: boolean; node?: { type: string; offset: number; length: number } } {
  const t = current ? targetAt(run, offset) : undefined;
  if (t && t.kind !== 'file' && t.range.start < offset && offset < t.range.end && text[t.range.start] === '"') {
    return {
      path: t.kind === 'key' ? ['inputs', t.input, 'location', 'key'] : ['inputs', t.input, 'name'],
      atKey: false,
      node: { type: 'string', offset: t.range.start, length: t.range.end - t.range.start },
    };
  }
  const loc = getLocation(text, offset);
  return { path: loc.path, atKey: loc.isAtPropertyKey, ...(loc.previousNode ? { node: loc.previousNode } : {}) };
}

/** Options of {@link completionAt}. */
export interface CompletionOptions {
  /** `run` checked exactly the document's text (its offsets are valid there). */
  current?: boolean;
  /** The client takes `itemDefaults.editRange`: the range is sent once, not with each of up to 1,000 items. */
  editRange?: boolean;
}

/** Completion at `offset`, or null when the cursor is not in a key or name string. */
export function completionAt(
  doc: TextDocument,
  run: CheckRun | undefined,
  offset: number,
  opts: CompletionOptions = {},
): CompletionList | null {
  const current = opts.current === true;
  if (!run) return null;
  const text = doc.getText();
  const { path: p, atKey, node } = cursorAt(text, run, current, offset);
  const inString = node && node.type === 'string' && node.offset < offset && offset <= node.offset + node.length;
  // A property name: the schema's names only (never words from other files).
  if (atKey) return propertyCompletion(doc, p.slice(0, -1), offset, text);
  if (p[0] !== 'inputs' || typeof p[1] !== 'number') return null;
  // The edit replaces the string's content, not its quotes, and the items carry no filterText:
  // clients that filter on the word before the cursor (Neovim's omnifunc starts at the edit's
  // start only without a filterText) then insert exactly the key, and VS Code filters on the
  // same typed text. An unterminated string (no closing quote yet) gets its quote from newText.
  const closed = inString && node.length >= 2 && text[node.offset + node.length - 1] === '"';
  const contentEnd = inString ? node.offset + node.length - (closed ? 1 : 0) : 0;
  const replace = inString ? rangeOf(doc, { start: node.offset + 1, end: contentEnd }) : undefined;
  const shared = !!replace && opts.editRange === true;
  const typedRaw = inString ? text.slice(node.offset + 1, offset) : '';
  const typed = typedRaw.toLowerCase();
  // Clients that complete only the word at the cursor (eglot 1.9's completion-at-point, C-M-i)
  // replace the text after the last '.' and insert `insertText` there, using the edit only
  // after a choice: the insertText is the key's rest after what is typed up to that '.'.
  // No filterText: VS Code filters it against the whole range, and Neovim 0.7's omnifunc
  // would then start its match at the word instead of the edit.
  const head = typedRaw.slice(0, typedRaw.lastIndexOf('.') + 1);
  const items: CompletionItem[] = [];
  let capped = false;
  const add = (label: string, detail: string, kind: CompletionItemKind, sort: string, also?: TextEdit[]) => {
    if (typed && !label.toLowerCase().includes(typed)) return;
    if (items.length >= MAX_ITEMS) {
      capped = true;
      return;
    }
    const quoted = JSON.stringify(label);
    const escaped = quoted.slice(1, -1);
    const content = escaped + (closed ? '' : '"');
    const edit = !replace
      ? { insertText: quoted }
      : shared
        ? content === label
          ? {}
          : { textEditText: content }
        : { textEdit: { range: replace, newText: content } };
    const rest = head && escaped.startsWith(head) && escaped.length > head.length ? escaped.slice(head.length) + (closed ? '' : '"') : '';
    items.push({
      label,
      kind,
      detail,
      sortText: sort + label,
      ...edit,
      ...(rest ? { insertText: rest } : {}),
      ...(also ? { additionalTextEdits: also } : {}),
    });
  };
  const spec = run.parsed.spec;
  if (p.length === 4 && p[2] === 'location' && p[3] === 'key') {
    const near = fileIndexNear(text, offset);
    const fi = near?.file ?? spec?.inputs[p[1]]?.location.file;
    const name = spec?.inputs[p[1]]?.name;
    // Keys of every shard of the checkpoint: the input's own file first; a key of another shard
    // also sets `location.file` to that shard (when the number is written beside the key).
    // the own file first: past MAX_ITEMS the list is cut, and its keys must be in it
    const order = run.files.map((_, j) => j).sort((a, b) => Number(b === fi) - Number(a === fi));
    for (const j of order) {
      const h = run.files[j]?.header;
      if (!h) continue;
      const own = fi === undefined || fi < 0 || j === fi;
      const fix = !own && near ? [{ range: rangeOf(doc, near.range), newText: String(j) }] : undefined;
      for (const info of h.tensors.values()) {
        add(
          info.key,
          `${info.dtype} ${shapeText(info.shape)} · files[${j}]${fix ? ' (sets location.file)' : ''}`,
          CompletionItemKind.Value,
          info.key === name ? '0' : own ? '1' : '2',
          fix,
        );
      }
    }
  } else if (p.length === 3 && p[2] === 'name') {
    const inputs = run.onnx?.summary?.inputs ?? [];
    const used = new Set(spec?.inputs.map((i) => i.name));
    for (const v of inputs) {
      if (RUNTIME_INPUT.test(v.name)) continue;
      add(
        v.name,
        `${v.dtype ?? ''} ${shapeText(v.dims)}${used.has(v.name) ? ' · mapped' : ''}`,
        CompletionItemKind.Field,
        used.has(v.name) ? '1' : '0',
      );
    }
  } else {
    return null;
  }
  return { isIncomplete: capped, ...(shared ? { itemDefaults: { editRange: replace } } : {}), items };
}

/**
 * `location.file` as written next to the cursor in the (possibly half-typed) text: the
 * enclosing `{…}` of the location object is searched for `"file": N`.
 */
function fileIndexNear(text: string, offset: number): { file: number; range: { start: number; end: number } } | undefined {
  const open = text.lastIndexOf('{', offset);
  const close = text.indexOf('}', offset);
  if (open < 0) return undefined;
  const body = text.slice(open, close < 0 ? Math.min(text.length, offset + 400) : close);
  const hit = /"file"\s*:\s*(\d+)/.exec(body);
  if (!hit) return undefined;
  const start = open + hit.index + hit[0].length - hit[1]!.length;
  return { file: Number(hit[1]), range: { start, end: start + hit[1]!.length } };
}

/** The schema of a spec as JSON Schema (core's, generated from the parser's zod schema), made once. */
let schemaOnce: JsonSchema | undefined;
type JsonSchema = { properties?: Record<string, JsonSchema>; items?: JsonSchema; anyOf?: JsonSchema[] };

/** The object schema at JSON path `p` of a spec (array steps through `items`, unions through the branch with properties). */
function objectSchemaAt(p: JsonPath): JsonSchema | undefined {
  let s: JsonSchema | undefined = (schemaOnce ??= specJsonSchema() as JsonSchema);
  const pick = (x: JsonSchema | undefined, want: 'properties' | 'items') => (x?.[want] ? x : x?.anyOf?.find((b) => b[want]));
  for (const seg of p) {
    s = typeof seg === 'number' ? pick(s, 'items')?.items : pick(s, 'properties')?.properties?.[seg];
    if (!s) return undefined;
  }
  return pick(s, 'properties');
}

/** Property names at an object of path `p`: the schema's names only, replacing the quoted word being typed at `offset`. */
function propertyCompletion(doc: TextDocument, p: JsonPath, offset: number, text: string): CompletionList | null {
  const props = objectSchemaAt(p)?.properties;
  if (!props) return null;
  // The word typed so far with its opening quote (jsonc-parser gives no node for an unterminated one), and its closing quote when there.
  const typed = /"[A-Za-z0-9_$-]*$/.exec(text.slice(Math.max(0, offset - 200), offset));
  const start = typed ? offset - typed[0].length : offset;
  const rest = /^[A-Za-z0-9_$-]*"?/.exec(text.slice(offset))![0];
  const range = rangeOf(doc, { start, end: typed ? offset + rest.length : offset });
  const items: CompletionItem[] = Object.keys(props).map((name) => ({
    label: name,
    kind: CompletionItemKind.Property,
    textEdit: { range, newText: JSON.stringify(name) },
    ...(typed ? { filterText: `"${name}"` } : {}),
  }));
  return { isIncomplete: false, items };
}
