/**
 * A fast path of `SpecSchema.safeParse` for the common document: every input of the plain v4+
 * shape `{name, location: {file, key}}` (plus optional `role` / `weight_input` strings). Zod
 * validates and copies each of 20 000 such inputs through its generic machinery, which was a
 * quarter of a cold check; here they are checked and copied by hand into the very objects zod
 * would return (same keys, same order), and zod validates the rest of the document. Anything
 * unusual in any input (another field, a wrong type, a missing value) makes the whole
 * document go through zod, so issues and output are always exactly zod's.
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
    // The shell keeps every own property (an own "__proto__" too: spread defines it).
    const shell = SpecSchema.safeParse({ ...(raw as Record<string, unknown>), inputs: [] });
    if (shell.success) {
      (shell.data as RawSpec).inputs = plain.inputs;
      return shell;
    }
  }
  return SpecSchema.safeParse(raw);
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
    // Zod's key order: the schema's (name, location, role, weight_input), then unknown ones.
    const input: Record<string, unknown> = { name, location: { file, key } };
    if (role) {
      if (!isNonEmpty(o.role)) return undefined;
      input.role = o.role;
    }
    if (weightInput) {
      if (!isNonEmpty(o.weight_input)) return undefined;
      input.weight_input = o.weight_input;
    }
    out[i] = input as RawInput;
    count += keys.length + 2; // the entry's own keys and its location's two
  }
  return { inputs: out, keys: count };
}

function isNonEmpty(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0;
}
