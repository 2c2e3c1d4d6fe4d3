/**
 * A fast path of `SpecSchema.safeParse` for the common document: every input of the plain v4+
 * shape `{name, location: {file, key}}` (plus optional `role` / `weight_input` strings). Zod
 * validates and copies each of 20 000 such inputs through its generic machinery, which was a
 * quarter of a cold check; here they are checked by hand: an input of just a name and a location
 * is kept as `JSON.parse` made it, any other is copied into the very object zod would return
 * (same keys, same order). The usual top level is validated by hand too, anything else by zod.
 * Anything unusual in any input (another field, a wrong type, a missing value) makes the whole
 * document go through zod, so issues and values are always exactly zod's (only a kept input's
 * fields keep the file's order, which nothing reads).
 */
import { SpecSchema, type RawInput, type RawSpec } from './schema';

/** zod's output for a document's `inputs` when every entry has the plain shape, and their own-key count. */
export interface PlainInputs {
  inputs: RawInput[];
  /** {@link ownKeyCount} of the `inputs` array, counted on the way (so the caller need not walk it again). */
  keys: number;
}

/** The plain inputs of document `raw` (an object with its own `inputs`), or undefined. */
export function plainInputsOf(raw: unknown): PlainInputs | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw) || !Object.prototype.hasOwnProperty.call(raw, 'inputs'))
    return undefined;
  return plainInputs((raw as { inputs: unknown }).inputs);
}

/**
 * `SpecSchema.safeParse(raw)`, with the same result. `plain` is {@link plainInputsOf}`(raw)`
 * when the caller already has it.
 */
export function parseSpecSchema(
  raw: unknown,
  plain: PlainInputs | undefined = plainInputsOf(raw),
): ReturnType<typeof SpecSchema.safeParse> {
  if (plain) {
    // The usual document around them needs no zod either: its first parse in a process
    // (the cold open) costs about 4 ms, all of it setting zod's schemas up.
    const data = plainShell(raw as Record<string, unknown>, plain.inputs);
    if (data) return { success: true, data } as ReturnType<typeof SpecSchema.safeParse>;
    // The shell keeps every own property (an own "__proto__" too: spread defines it).
    const shell = SpecSchema.safeParse({ ...(raw as Record<string, unknown>), inputs: [] });
    if (shell.success) {
      (shell.data as RawSpec).inputs = plain.inputs;
      return shell;
    }
  }
  return SpecSchema.safeParse(raw);
}

/** The top-level fields {@link plainShell} takes, in the schema's order (zod's output order). */
const SHELL_FIELDS = ['version', 'files', 'inputs', 'model_id', 'model_name'] as const;

/**
 * zod's output for the usual document (`version`, `files` of paths or `{path, format}`,
 * `inputs`, `model_id`, `model_name`, nothing else) with `inputs` already made, else undefined.
 * Same objects as zod makes: the schema's fields in its order, fresh file entries.
 */
function plainShell(raw: Record<string, unknown>, inputs: RawInput[]): RawSpec | undefined {
  const keys = Object.keys(raw);
  for (let k = 0; k < keys.length; k++) if (!(SHELL_FIELDS as readonly string[]).includes(keys[k]!)) return undefined;
  const { version, files, model_id: modelId, model_name: modelName } = raw;
  if (version !== undefined && !(typeof version === 'number' && Number.isSafeInteger(version) && version >= 1)) return undefined;
  if ((modelId !== undefined && typeof modelId !== 'string') || (modelName !== undefined && typeof modelName !== 'string'))
    return undefined;
  if (!Array.isArray(files)) return undefined;
  const list: { path: string; format?: string }[] = new Array<{ path: string; format?: string }>(files.length);
  for (let i = 0; i < files.length; i++) {
    const f: unknown = files[i];
    if (isNonEmpty(f)) {
      list[i] = { path: f };
      continue;
    }
    if (typeof f !== 'object' || f === null || Array.isArray(f)) return undefined;
    const o = f as Record<string, unknown>;
    const fkeys = Object.keys(o);
    let format = false;
    for (let k = 0; k < fkeys.length; k++) {
      if (fkeys[k] === 'format') format = true;
      else if (fkeys[k] !== 'path') return undefined;
    }
    if (!isNonEmpty(o.path) || (format && !isNonEmpty(o.format))) return undefined;
    list[i] = format ? { path: o.path, format: o.format as string } : { path: o.path };
  }
  const out: Record<string, unknown> = {};
  if (version !== undefined) out.version = version;
  out.files = list;
  out.inputs = inputs;
  if (modelId !== undefined) out.model_id = modelId;
  if (modelName !== undefined) out.model_name = modelName;
  return out as RawSpec;
}

/**
 * zod's output for `inputs` when every entry has the plain shape, else undefined. Each entry is
 * judged from its own key list (no hasOwnProperty call per field: this loop runs once per
 * input in a fresh process, mostly before the engine compiles it, where each call costs).
 */
function plainInputs(list: unknown): PlainInputs | undefined {
  if (!Array.isArray(list)) return undefined;
  const out: RawInput[] = new Array<RawInput>(list.length);
  let count = 0;
  for (let i = 0; i < list.length; i++) {
    const v: unknown = list[i];
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o);
    let name: unknown;
    let loc: unknown;
    let role = false;
    let weightInput = false;
    for (let k = 0; k < keys.length; k++) {
      const key = keys[k];
      if (key === 'name') name = o.name;
      else if (key === 'location') loc = o.location;
      else if (key === 'role') role = true;
      else if (key === 'weight_input') weightInput = true;
      else return undefined;
    }
    if (!isNonEmpty(name) || typeof loc !== 'object' || loc === null || Array.isArray(loc)) return undefined;
    const l = loc as Record<string, unknown>;
    const lkeys = Object.keys(l);
    if (lkeys.length !== 2 || !((lkeys[0] === 'file' && lkeys[1] === 'key') || (lkeys[0] === 'key' && lkeys[1] === 'file')))
      return undefined;
    const file = l.file;
    const key = l.key;
    if (typeof file !== 'number' || !Number.isSafeInteger(file) || file < 0 || !isNonEmpty(key)) return undefined;
    count += keys.length + 2; // the entry's own keys and its location's two
    if (keys.length === 2) {
      // Just a name and a location: the parsed object itself is the validated input (zod would
      // copy it, with its fields in the schema's order; nothing reads that order). No copy of
      // 20 000 inputs is made and collected on a cold open. A name equal to its key becomes the
      // key's string (normalize.ts keeps these objects as the normalized inputs): 20 000 inputs
      // hold 1 MiB less.
      if (name === key) o.name = key;
      out[i] = o as RawInput;
      continue;
    }
    // Zod's key order: the schema's (name, location, role, weight_input), then unknown ones.
    const input: Record<string, unknown> = { name: name === key ? key : name, location: { file, key } };
    if (role) {
      if (!isNonEmpty(o.role)) return undefined;
      input.role = o.role;
    }
    if (weightInput) {
      if (!isNonEmpty(o.weight_input)) return undefined;
      input.weight_input = o.weight_input;
    }
    out[i] = input as RawInput;
  }
  return { inputs: out, keys: count };
}

function isNonEmpty(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0;
}
