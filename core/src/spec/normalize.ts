/**
 * A validated spec document of any version turned into the v5-shaped {@link WeightSpec}, with
 * the JSON path of every input's parts kept for diagnostics (parse.ts validates and calls it).
 */
import path from 'node:path';
import type { RawInput, RawSpec } from './schema';
import {
  type InputSource,
  type InputSources,
  type JsonPath,
  type SpecFile,
  type SpecInput,
  type SpecSources,
  type WeightSpec,
} from './types';

/** QEfficient's `WEIGHT_SPEC_VERSION`: what `load_weight_spec` assumes when `version` is absent. */
const QEFF_DEFAULT_SPEC_VERSION = 5;

const LEGACY_TOP = new Set(['checkpoint_files', 'weights_root', 'checkpoint_base_dir']);

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

  /** Inputs `0..n` (of an empty list), each located and named by `name`. */
  allLocated(n: number): void {
    if (this.raw.length < n) {
      this.raw = new Int32Array(n);
      this.kind = new Uint8Array(n);
    }
    for (let i = 0; i < n; i++) this.raw[i] = i;
    this.kind.fill(1, 0, n);
    this.length = n;
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

/**
 * Turns any version's validated document into the v5-shaped {@link WeightSpec}. What
 * QEfficient's `load_weight_spec` reads is read the same way: no `version` is v5; a path
 * string in `location.file` names the file (appended to `files` when not listed); an input
 * with a null or absent location (and no v1 `fqn`) is skipped and its index returned.
 */
export function normalize(
  raw: RawSpec,
  source: Record<string, unknown>,
  plainInputs = false,
): { spec: WeightSpec; sources: SpecSources; skipped: number[] } {
  const listKey = raw.files !== undefined ? 'files' : 'checkpoint_files';
  const list = (raw.files ?? raw.checkpoint_files)!;
  const base = raw.weights_root ?? raw.checkpoint_base_dir;
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
  if (plainInputs) {
    // parseSpecSchema's own copies of the usual inputs (fast-schema.ts): each named, located by
    // a file index, with a name equal to its key already the key's string: the normalized inputs.
    inputSources.allLocated(raw.inputs.length);
    return { spec: specOf(raw, source, files, raw.inputs as SpecInput[]), sources, skipped: [] };
  }
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
  return { spec: specOf(raw, source, files, inputs), sources, skipped };
}

/** The normalized document: unknown fields as the source has them, then version, files and inputs. */
function specOf(raw: RawSpec, source: Record<string, unknown>, files: SpecFile[], inputs: SpecInput[]): WeightSpec {
  const rawDoc = raw as Record<string, unknown>;
  const extras: Record<string, unknown> = {};
  // Unknown fields come from the source document (zod's copy would turn "__proto__" into a
  // prototype); known ones from the validated copy.
  for (const [k, v] of Object.entries(source)) {
    if (LEGACY_TOP.has(k) || k === 'files' || k === 'inputs') continue;
    const value = Object.prototype.hasOwnProperty.call(rawDoc, k) ? rawDoc[k] : v;
    Object.defineProperty(extras, k, { value, enumerable: true, writable: true, configurable: true });
  }
  return { ...extras, version: raw.version ?? QEFF_DEFAULT_SPEC_VERSION, files, inputs };
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
