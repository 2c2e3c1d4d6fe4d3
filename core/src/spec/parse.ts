/**
 * Parsing weight_spec.json text into a normalized {@link WeightSpec} with source offsets.
 * `parseSpecText` never throws: JSON syntax errors and schema violations come back as
 * {@link Problem} values whose ranges point at the offending text.
 */
import { closestWord } from '../foundation/closest-word';
import { ownKeyCount, scanJsonShape } from '../formats/json-depth';
import { MAX_JSON_BYTES, readInputFile } from '../paths/file-kind';
import path from 'node:path';
import { parseTree, printParseErrorCode, type Node, type ParseError } from 'jsonc-parser';
import { FormatError, oneLine, type Problem } from '../errors';
import { problem } from '../problem-codes';
import { issuePath } from '../zod-issue';
import { fastParseTree } from './fast-tree';
import { formatPath, SpecOffsets } from './offsets';
import { parseSpecSchema, plainInputsOf } from './fast-schema';
import type { RawInput, RawSpec } from './schema';
import {
  LATEST_SPEC_VERSION,
  type InputSource,
  type InputSources,
  type JsonPath,
  type SpecFile,
  type SpecInput,
  type SpecSources,
  type WeightSpec,
} from './types';

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
  const { spec, sources, skipped } = normalize(result.data, raw as Record<string, unknown>);
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

/** QEfficient's `WEIGHT_SPEC_VERSION`: what `load_weight_spec` assumes when `version` is absent. */
const QEFF_DEFAULT_SPEC_VERSION = 5;

const LEGACY_TOP = new Set(['checkpoint_files', 'weights_root', 'checkpoint_base_dir']);

/**
 * Turns any version's validated document into the v5-shaped {@link WeightSpec}. What
 * QEfficient's `load_weight_spec` reads is read the same way: no `version` is v5; a path
 * string in `location.file` names the file (appended to `files` when not listed); an input
 * with a null or absent location (and no v1 `fqn`) is skipped and its index returned.
 */
/**
 * The source paths of a located input `inputs[i]`, made when read: four arrays per input were
 * a third of a parsed 20 000-input spec's heap (and of its allocation), and most are never read.
 */
class LocatedInputSource implements InputSource {
  constructor(
    private readonly i: number,
    private readonly nameField: 'name' | 'fqn',
  ) {}

  get node(): JsonPath {
    return ['inputs', this.i];
  }

  get name(): JsonPath {
    return ['inputs', this.i, this.nameField];
  }

  get key(): JsonPath {
    return ['inputs', this.i, 'location', 'key'];
  }

  get file(): JsonPath {
    return ['inputs', this.i, 'location', 'file'];
  }
}

/**
 * {@link InputSources} in typed arrays: per input, the document index of its entry and how
 * it names itself; an input with a location (every v2+ input) gets its paths made on demand.
 * Others (v1 inputs without a location) are kept as objects.
 */
class InputSourceList implements InputSources {
  private raw: Int32Array;
  /** 0: kept in `other`; 1: located, named by `name`; 2: located, named by `fqn`. */
  private kind: Uint8Array;
  private readonly other = new Map<number, InputSource>();
  length = 0;

  /** `capacity`: the number of inputs expected (the document's), so the arrays are made once. */
  constructor(capacity: number) {
    this.raw = new Int32Array(Math.max(64, capacity));
    this.kind = new Uint8Array(this.raw.length);
  }

  located(rawIndex: number, nameField: 'name' | 'fqn'): void {
    this.push(rawIndex, nameField === 'name' ? 1 : 2);
  }

  add(src: InputSource): void {
    this.other.set(this.length, src);
    this.push(-1, 0);
  }

  at(i: number): InputSource | undefined {
    if (!(i >= 0 && i < this.length)) return undefined;
    const k = this.kind[i]!;
    return k === 0 ? this.other.get(i) : new LocatedInputSource(this.raw[i]!, k === 1 ? 'name' : 'fqn');
  }

  private push(rawIndex: number, kind: number): void {
    if (this.length === this.raw.length) {
      const r = new Int32Array(this.length * 2);
      r.set(this.raw);
      this.raw = r;
      const k = new Uint8Array(this.length * 2);
      k.set(this.kind);
      this.kind = k;
    }
    this.raw[this.length] = rawIndex;
    this.kind[this.length++] = kind;
  }
}

function normalize(raw: RawSpec, source: Record<string, unknown>): { spec: WeightSpec; sources: SpecSources; skipped: number[] } {
  const listKey = raw.files !== undefined ? 'files' : 'checkpoint_files';
  const list = (raw.files ?? raw.checkpoint_files)!;
  const base = raw.weights_root ?? raw.checkpoint_base_dir;
  const rawDoc = raw as Record<string, unknown>;
  const rawList = source[listKey] as unknown[];
  const inputSources = new InputSourceList(raw.inputs.length);
  const sources: SpecSources = { files: [], inputs: inputSources };

  const files: SpecFile[] = list.map((entry, i) => {
    const wasString = typeof rawList[i] === 'string';
    const node: JsonPath = [listKey, i];
    sources.files.push({
      node,
      path: wasString ? node : [...node, 'path'],
      format: !wasString && entry.format !== undefined ? [...node, 'format'] : undefined,
    });
    const p = base !== undefined && !isAbsolutePath(entry.path) ? path.posix.join(base, entry.path) : entry.path;
    return { ...entry, path: p, format: entry.format ?? 'safetensors' };
  });

  const tied = tiedMap(raw.tied_weights);
  const skipped: number[] = [];
  /** A `location.file` path string → its index in `files` (appended when no entry has that path). */
  const fileIndex = (p: string, at: JsonPath): number => {
    const found = files.findIndex((f) => f.path === p);
    if (found >= 0) return found;
    files.push({ path: p, format: 'safetensors' });
    sources.files.push({ node: at, path: at });
    return files.length - 1;
  };
  const inputs: SpecInput[] = [];
  // Paths are made only where they are kept (a located input's are made on demand): three
  // arrays per input were 240 000 short-lived allocations on an 80 000-input open.
  raw.inputs.forEach((input: RawInput, i) => {
    if (!input.location && input.fqn === undefined) {
      skipped.push(i);
      return;
    }
    const name = input.name ?? input.fqn!;
    if (input.location) {
      inputSources.located(i, input.name !== undefined ? 'name' : 'fqn');
      if (typeof input.location.file === 'string') {
        const file = fileIndex(input.location.file, ['inputs', i, 'location', 'file']);
        inputs.push({ ...input, name, location: { ...input.location, file } } as SpecInput);
        return;
      }
      // The validated input is a fresh object of our own (zod's or parseSpecSchema's copy):
      // with its own name it already is the normalized input. A name equal to the key (the
      // usual case) becomes the same string object: 20 000 inputs hold 1 MiB less.
      if (input.name !== undefined && input.name === input.location.key) input.name = input.location.key;
      inputs.push(input.name !== undefined ? (input as SpecInput) : ({ ...input, name, location: input.location } as SpecInput));
      return;
    }
    // v1 without a location: the fqn (or what it is tied to) is the key.
    const key = tied.get(input.fqn!) ?? tied.get(name) ?? input.fqn!;
    const fileIdx = input.file ?? (files.length === 1 ? 0 : -1);
    const node: JsonPath = ['inputs', i];
    const namePath: JsonPath = input.name !== undefined ? ['inputs', i, 'name'] : ['inputs', i, 'fqn'];
    inputSources.add({ node, name: namePath, key: [...node, 'fqn'], file: input.file !== undefined ? [...node, 'file'] : node });
    const { file: _file, location: _location, ...rest } = input;
    inputs.push({ ...rest, name, location: { file: fileIdx, key } } as SpecInput);
  });

  const extras: Record<string, unknown> = {};
  // Unknown fields come from the source document (zod's copy would turn "__proto__" into a
  // prototype); known ones from the validated copy.
  for (const [k, v] of Object.entries(source)) {
    if (LEGACY_TOP.has(k) || k === 'files' || k === 'inputs') continue;
    const value = Object.prototype.hasOwnProperty.call(rawDoc, k) ? rawDoc[k] : v;
    Object.defineProperty(extras, k, { value, enumerable: true, writable: true, configurable: true });
  }
  const spec: WeightSpec = { ...extras, version: raw.version ?? QEFF_DEFAULT_SPEC_VERSION, files, inputs };
  return { spec, sources, skipped };
}

function tiedMap(t: RawSpec['tied_weights']): Map<string, string> {
  const m = new Map<string, string>();
  if (Array.isArray(t)) for (const [a, b] of t) m.set(a, b);
  else if (t) for (const [a, b] of Object.entries(t)) m.set(a, b);
  return m;
}

function isAbsolutePath(p: string): boolean {
  return path.posix.isAbsolute(p) || path.win32.isAbsolute(p);
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
