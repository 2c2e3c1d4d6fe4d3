/**
 * A small typed flag parser (no dependency): each command declares its flags once, and the
 * parsed result is typed from that declaration. Accepts `--flag value`, `--flag=value`,
 * repeated flags for `multiple`, and `--` to end flags. Anything unexpected is a
 * {@link UsageError} (exit code 2).
 */
import { closestWord } from '../foundation/closest-word';
import { UsageError } from '../errors';
import { printable } from '../paths/policy-error';

/** How a flag's value is read. */
export type FlagType = 'boolean' | 'string' | 'number' | 'int';

/** Declaration of one flag. */
export interface FlagDef {
  type: FlagType;
  description: string;
  /** Shown in usage, e.g. `<dir>`. */
  placeholder?: string;
  /** Allowed values of a string flag. */
  choices?: readonly string[];
  /** May be given several times (value becomes an array). */
  multiple?: boolean;
  /** Must be given. */
  required?: boolean;
}

/** A command's flags by name (without the leading `--`). */
export type FlagDefs = Record<string, FlagDef>;

type Scalar<D extends FlagDef> = D['type'] extends 'boolean' ? boolean : D['type'] extends 'number' | 'int' ? number : string;

/** The parsed value of one flag. */
export type FlagValue<D extends FlagDef> = D['type'] extends 'boolean'
  ? boolean
  : D['multiple'] extends true
    ? Scalar<D>[]
    : D['required'] extends true
      ? Scalar<D>
      : Scalar<D> | undefined;

/** Parsed command line of one command. */
export interface ParsedArgs<F extends FlagDefs> {
  flags: { [K in keyof F]: FlagValue<F[K]> };
  positionals: string[];
}

/** Parses `argv` (the words after the command name) against `defs`. */
export function parseArgs<F extends FlagDefs>(argv: readonly string[], defs: F, command: string): ParsedArgs<F> {
  const flags: Record<string, unknown> = {};
  const positionals: string[] = [];
  for (const [name, d] of Object.entries(defs)) {
    if (d.type === 'boolean') flags[name] = false;
    else if (d.multiple) flags[name] = [];
  }
  let i = 0;
  while (i < argv.length) {
    const word = argv[i]!;
    i++;
    if (word === '--') {
      positionals.push(...argv.slice(i));
      break;
    }
    if (!word.startsWith('--') || word === '--') {
      if (word.startsWith('-') && word.length > 1 && !/^-\d/.test(word)) {
        throw new UsageError(`${command}: unknown option ${word}`);
      }
      positionals.push(word);
      continue;
    }
    const eq = word.indexOf('=');
    const name = word.slice(2, eq >= 0 ? eq : undefined);
    const def = defs[name];
    if (!def) throw new UsageError(`${command}: unknown option --${name}${suggestFlag(name, defs)}`);
    if (def.type === 'boolean') {
      if (eq >= 0) {
        const v = word.slice(eq + 1);
        if (v !== 'true' && v !== 'false') throw new UsageError(`${command}: --${name} takes no value (or =true/=false)`);
        flags[name] = v === 'true';
      } else {
        flags[name] = true;
      }
      continue;
    }
    let raw: string;
    if (eq >= 0) {
      raw = word.slice(eq + 1);
    } else {
      if (i >= argv.length || (argv[i]!.startsWith('--') && argv[i] !== '--')) {
        throw new UsageError(`${command}: --${name} needs a value${def.placeholder ? ` ${def.placeholder}` : ''}`);
      }
      raw = argv[i]!;
      i++;
    }
    const value = convert(command, name, def, raw);
    if (def.multiple) (flags[name] as unknown[]).push(value);
    else if (flags[name] !== undefined) throw new UsageError(`${command}: --${name} given twice`);
    else flags[name] = value;
  }
  for (const [name, d] of Object.entries(defs)) {
    if (d.required && (flags[name] === undefined || (d.multiple && (flags[name] as unknown[]).length === 0))) {
      throw new UsageError(`${command}: missing required option --${name}${d.placeholder ? ` ${d.placeholder}` : ''}`);
    }
  }
  return { flags: flags as ParsedArgs<F>['flags'], positionals };
}

function convert(command: string, name: string, def: FlagDef, raw: string): string | number {
  if (def.type === 'string') {
    if (def.choices && !def.choices.includes(raw)) {
      throw new UsageError(`${command}: --${name} must be one of ${def.choices.join(', ')} (got "${printable(raw)}")`);
    }
    // An empty value is never meant: `--out ''` would otherwise mean the current directory.
    if (raw === '')
      throw new UsageError(`${command}: --${name} needs a value${def.placeholder ? ` ${def.placeholder}` : ''} (got an empty string)`);
    return raw;
  }
  const shown = printable(raw);
  if (def.type === 'int') {
    // Decimal digits only (Number() would take 0x10, 1e3, " 7"), and exactly representable.
    if (!/^-?\d+$/.test(raw)) throw new UsageError(`${command}: --${name} needs a decimal integer (got "${shown}")`);
    const n = Number(raw);
    if (!Number.isSafeInteger(n))
      throw new UsageError(`${command}: --${name} is too large (got ${shown}; at most ${Number.MAX_SAFE_INTEGER})`);
    return n;
  }
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n) || !/^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/.test(raw)) {
    throw new UsageError(`${command}: --${name} needs a number (got "${shown}")`);
  }
  return n;
}

function suggestFlag(name: string, defs: FlagDefs): string {
  const hit = closestWord(name, [...Object.keys(defs), 'help']);
  return hit ? ` (did you mean --${hit}?)` : '';
}

/** Usage lines for a command's flags: `  --dtype <d>   target dtype (float32|float16)`. */
export function describeFlags(defs: FlagDefs): string[] {
  const rows = Object.entries(defs).map(([name, d]) => {
    const head = `--${name}${d.type === 'boolean' ? '' : ` ${d.placeholder ?? '<value>'}`}`;
    const extra = d.choices ? ` (${d.choices.join('|')})` : '';
    return [head, `${d.description}${extra}${d.multiple ? ' (repeatable)' : ''}`] as const;
  });
  const w = Math.max(0, ...rows.map((r) => r[0].length));
  return rows.map(([h, t]) => `  ${h.padEnd(w)}  ${t}`);
}
