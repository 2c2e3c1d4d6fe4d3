/**
 * Parsing weight_spec.json text into a normalized {@link WeightSpec} with source offsets.
 * `parseSpecText` never throws: JSON syntax errors and schema violations come back as
 * {@link Problem} values whose ranges point at the offending text.
 */
import { closestWord } from '../foundation/closest-word';
import { ownKeyCount, scanJsonShape } from '../formats/json-depth';
import { MAX_JSON_BYTES, readInputFile } from '../paths/file-kind';
import { parseTree, printParseErrorCode, type Node, type ParseError } from 'jsonc-parser';
import { FormatError, oneLine, type Problem } from '../errors';
import { problem } from '../problem-codes';
import { issuePath } from '../zod-issue';
import { fastParseTree } from './fast-tree';
import { normalize } from './normalize';
import { formatPath, SpecOffsets } from './offsets';
import { parseSpecSchema, plainInputsOf } from './fast-schema';
import { LATEST_SPEC_VERSION, type SpecSources, type WeightSpec } from './types';

/** The result of {@link parseSpecText}. `spec` is absent when the text is not a usable spec. */
export interface ParsedSpec {
  spec?: WeightSpec;
  problems: Problem[];
  offsets: SpecOffsets;
  /** Source-document paths of each normalized file/input (present with `spec`). */
  sources?: SpecSources;
  /** The jsonc-parser tree (for completion/hover in the language server). */
  tree?: Node;
}

/** Parses spec text; `file` is used in messages only. Never throws. */
export function parseSpecText(text: string, file: string): ParsedSpec {
  try {
    return parseUnsafe(text);
  } catch (err) {
    // A bug must not take the language server down: report it as a problem on the document.
    return {
      problems: [problem('internal', `cannot parse ${file}: ${oneLine(err)}`, [])],
      offsets: new SpecOffsets(),
    };
  }
}

const PARSE_OPTIONS = { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false };

/** Deepest nesting accepted; jsonc-parser, the offset walk and the formatter recurse per level (fuzz finding). */
export const MAX_JSON_DEPTH = 1000;

function parseUnsafe(text: string): ParsedSpec {
  const shape = scanJsonShape(text, MAX_JSON_DEPTH);
  const deepAt = shape.deepAt;
  if (deepAt >= 0) {
    return {
      problems: [
        problem('json-syntax', `invalid JSON: nested deeper than ${MAX_JSON_DEPTH} levels`, [], { start: deepAt, end: deepAt + 1 }),
      ],
      offsets: new SpecOffsets(),
    };
  }
  const errors: ParseError[] = [];
  // Strict JSON (the common case) is parsed by JSON.parse; its tree (token-boundary builder)
  // is built only when an offset is first asked for, and duplicate keys are ruled out by
  // counting properties. Anything else goes through jsonc-parser, whose error recovery gives
  // the diagnostics.
  let strict: { value: unknown } | undefined;
  try {
    strict = { value: JSON.parse(text) };
  } catch {
    strict = undefined;
  }
  let offsets: SpecOffsets;
  let tree: Node | undefined;
  // The usual inputs are checked (and copied as zod would) first: that pass counts their keys
  // too, so the duplicate check walks only the rest of the document.
  const plain = strict ? plainInputsOf(strict.value) : undefined;
  const ownKeys =
    strict === undefined ? 0 : plain ? keysBesideInputs(strict.value as Record<string, unknown>) + plain.keys : ownKeyCount(strict.value);
  if (strict && shape.properties === ownKeys) {
    // No object repeats a key (see scanJsonShape): a compact index, built on first lookup.
    offsets = SpecOffsets.ofStrictJson(text);
  } else if (strict) {
    // Valid JSON: jsonc-parser (the fallback, never expected) reports no errors on it.
    tree = fastParseTree(text) ?? parseTree(text, [], PARSE_OPTIONS);
    offsets = new SpecOffsets(tree);
  } else {
    tree = parseTree(text, errors, PARSE_OPTIONS);
    offsets = new SpecOffsets(tree);
  }
  const problems: Problem[] = [];
  for (const e of errors) {
    // Clamped: an error at end of input must not point past the text (fuzz finding).
    const range = { start: Math.min(e.offset, text.length), end: Math.min(text.length, e.offset + Math.max(1, e.length)) };
    problems.push(problem('json-syntax', `invalid JSON: ${syntaxMessage(e)}`, [], range));
  }
  if (!strict && (!tree || errors.length > 0)) {
    if (!tree && errors.length === 0) {
      problems.push(problem('json-syntax', 'the file is empty', [], { start: 0, end: 0 }));
    }
    return { problems, offsets, tree };
  }
  for (const d of offsets.duplicates) {
    problems.push(problem('duplicate-property', `${formatPath(d.path)}: duplicate property (the last one is used)`, d.path, d.range));
  }
  // JSON.parse's value equals the tree's (own "__proto__" properties included), and is
  // several times faster than rebuilding it from the tree.
  const raw: unknown = strict ? strict.value : nodeValue(tree!);
  const result = parseSpecSchema(raw, strict ? plain : undefined);
  if (!result.success) {
    for (const issue of result.error.issues) {
      const p = issuePath(issue);
      const missing = !offsets.value(p);
      const last = p[p.length - 1];
      const where = missing ? p.slice(0, -1) : p;
      const message =
        missing && typeof last === 'string' ? `missing required field "${last}"${misspeltField(raw, where, last)}` : issue.message;
      problems.push(problem('schema', `${formatPath(where)}: ${message}`, p, offsets.anchor(p)));
    }
    return withTree({ problems, offsets }, text, tree);
  }
  const { spec, sources, skipped } = normalize(result.data, raw as Record<string, unknown>, strict !== undefined && plain !== undefined);
  for (const i of skipped) {
    const range = offsets.anchor(['inputs', i, 'location']) ?? offsets.anchor(['inputs', i]);
    problems.push(
      problem(
        'input-skipped',
        `inputs[${i}]: no location; skipped (as QEfficient's load_weight_spec skips location-less entries)`,
        ['inputs', i],
        range,
      ),
    );
  }
  if (spec.version > LATEST_SPEC_VERSION) {
    const message = `version ${spec.version} is newer than this tool knows (${LATEST_SPEC_VERSION}); reading it as v${LATEST_SPEC_VERSION}`;
    problems.push(problem('spec-version', message, ['version'], offsets.value(['version'])));
  }
  return withTree({ spec, problems, offsets, sources }, text, tree);
}

/** {@link ownKeyCount} of a document object without what its `inputs` holds (counted by the caller). */
function keysBesideInputs(doc: Record<string, unknown>): number {
  const keys = Object.keys(doc);
  let n = keys.length;
  for (const k of keys) if (k !== 'inputs') n += ownKeyCount(doc[k]);
  return n;
}

/**
 * `parsed.tree`: the given tree, or (strict JSON indexed by offsets) one built from `text` on
 * first read. Assignable, as a plain field would be (patch.ts drops it after an edit).
 */
function withTree(parsed: ParsedSpec, text: string, tree: Node | undefined): ParsedSpec {
  if (tree) {
    parsed.tree = tree;
    return parsed;
  }
  let set: { tree: Node | undefined } | undefined;
  // The text is let go once the tree is built or replaced: a patched parse (patch.ts) lives
  // on through many edits and must not pin the version it was first parsed from.
  let source: string | undefined = text;
  Object.defineProperty(parsed, 'tree', {
    enumerable: true,
    configurable: true,
    get: () => {
      if (!set) {
        const t = source!;
        source = undefined;
        set = { tree: fastParseTree(t) ?? parseTree(t, [], PARSE_OPTIONS) };
      }
      return set.tree;
    },
    set: (v: Node | undefined) => {
      set = { tree: v };
      source = undefined;
    },
  });
  return parsed;
}

/**
 * The plain value of a tree node, like JSON.parse: `"__proto__"` becomes an own property
 * (jsonc-parser's getNodeValue assigns it, which would swap the object's prototype).
 */
function nodeValue(n: Node): unknown {
  switch (n.type) {
    case 'object': {
      const o: Record<string, unknown> = {};
      for (const prop of n.children ?? []) {
        const [k, v] = prop.children ?? [];
        if (!k || !v) continue;
        Object.defineProperty(o, String(k.value), { value: nodeValue(v), enumerable: true, writable: true, configurable: true });
      }
      return o;
    }
    case 'array':
      return (n.children ?? []).map(nodeValue);
    default:
      return n.value;
  }
}

function syntaxMessage(e: ParseError): string {
  const code = printParseErrorCode(e.error);
  return code.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
}

/**
 * Reads and parses a spec file; raises one {@link FormatError} naming the file and the first
 * error (with its byte offset) when the file is unreadable or not a valid spec.
 */
export async function readSpec(file: string): Promise<WeightSpec> {
  return specFromText(specTextOf(await readInputFile(file, file, MAX_JSON_BYTES), file), file);
}

/**
 * A spec file's bytes as text. A spec is UTF-8 JSON without a byte-order mark (QEfficient's
 * json.load refuses a BOM too); a UTF-16 file or a BOM gets a message saying so, rather than
 * a JSON syntax error at byte 0.
 */
export function specTextOf(bytes: Uint8Array, file: string): string {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    throw new FormatError(file, 'starts with a UTF-8 byte-order mark; save it as UTF-8 without BOM', 0);
  }
  const utf16 =
    (bytes[0] === 0xff && bytes[1] === 0xfe) ||
    (bytes[0] === 0xfe && bytes[1] === 0xff) ||
    (bytes.length >= 2 && (bytes[0] === 0 || bytes[1] === 0));
  if (utf16) throw new FormatError(file, 'is UTF-16 encoded; a weight spec is UTF-8 JSON (save it as UTF-8)', 0);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new FormatError(file, 'is not valid UTF-8', Buffer.from(bytes).toString('utf8').indexOf('\ufffd'));
  }
}

/** Like {@link readSpec} for text already in memory. Throws {@link FormatError} on errors. */
export function specFromText(text: string, file: string): WeightSpec {
  const parsed = parseSpecText(text, file);
  const first = parsed.problems.find((p) => p.severity === 'error');
  if (first || !parsed.spec) {
    const byte = first?.range ? Buffer.byteLength(text.slice(0, first.range.start), 'utf8') : undefined;
    throw new FormatError(file, first?.message ?? 'not a weight spec', byte);
  }
  return parsed.spec;
}

/**
 * `; "kee" looks like a misspelling of it` when the object at `where` has an unknown field
 * resembling the missing `field` (the user typed the field, just not right).
 */
function misspeltField(raw: unknown, where: (string | number)[], field: string): string {
  let v: unknown = raw;
  for (const k of where) v = v && typeof v === 'object' ? (v as Record<string | number, unknown>)[k] : undefined;
  if (!v || typeof v !== 'object' || Array.isArray(v)) return '';
  const typo = Object.keys(v).find((k) => k !== field && closestWord(k, [field]) === field);
  return typo === undefined ? '' : `; "${typo}" looks like a misspelling of it`;
}
