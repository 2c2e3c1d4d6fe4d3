/**
 * The family registry: one row per model family (vLLM's `models/registry.py` pattern), each
 * row exported by the family's own `families/<name>.ts` (see `families/row.ts` for its fields).
 * Every place that names families reads this table: the supported model types and their
 * refusal message, config → ArchSpec dispatch (`families.ts`), the spec's `model_name`
 * (`layout.ts`), the key prefix of QEfficient's name lookup (`resolve/name-strategies.ts`) and
 * the tests' SYNTHETIC_CONFIGS. Adding a family: its file, its test, one line in `all.ts`.
 */
import { FormatError } from '../../errors';
import { quantSchemeOf } from '../../prepare/quant-config';
import * as allFamilies from './all';
import type { FamilyRow, TestConfig } from './row';

/**
 * Every family `export --config` builds, in the order the refusal message lists them: the rows
 * of `all.ts` (a module namespace lists its exports by name), so adding a family is one line there.
 */
export const FAMILIES: readonly FamilyRow[] = Object.values(allFamilies);

/** The model types the builder implements (each row's `model_type`; aliases are not listed). */
export const SUPPORTED_MODEL_TYPES: readonly string[] = FAMILIES.map((f) => f.modelType);
/** One supported model type. */
export type ModelType = string;

/** Lookups over a list of rows: by model_type or alias, and by `architectures` class. */
export function familyLookup(rows: readonly FamilyRow[]): (config: unknown) => FamilyRow | undefined {
  const byType = new Map<string, FamilyRow>();
  const byClass = new Map<string, FamilyRow>();
  for (const f of rows) {
    for (const t of [f.modelType, ...(f.aliases ?? [])]) {
      if (byType.has(t)) throw new Error(`family registry: model_type "${t}" is claimed twice`);
      byType.set(t, f);
    }
    for (const c of f.architectures ?? []) {
      if (byClass.has(c)) throw new Error(`family registry: architecture "${c}" is claimed twice`);
      byClass.set(c, f);
    }
  }
  return (config) => {
    if (typeof config !== 'object' || config === null) return undefined;
    const c = config as { model_type?: unknown; architectures?: unknown };
    // a config naming a model_type is that type (or unsupported); only configs without one (Grok-1) go by class
    if (c.model_type !== undefined) return typeof c.model_type === 'string' ? byType.get(c.model_type) : undefined;
    const classes = Array.isArray(c.architectures) ? c.architectures : [];
    for (const a of classes) if (typeof a === 'string' && byClass.has(a)) return byClass.get(a);
    return undefined;
  };
}

/** The row a config object names: by `model_type` (or alias), else (no model_type) by a known `architectures` class. */
export const familyOfConfig: (config: unknown) => FamilyRow | undefined = familyLookup(FAMILIES);

/**
 * The family of a config.json object, refused with one line naming the file unless supported.
 * A quantization prepare undoes is fine (the graph takes the dequantized weights); any other is
 * refused with prepare's own message.
 */
export function familyOf(raw: unknown, file: string): FamilyRow {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new FormatError(file, `not a JSON object`);
  const t = (raw as Record<string, unknown>).model_type;
  const row = familyOfConfig(raw);
  if (!row) {
    if (typeof t !== 'string') throw new FormatError(file, `"model_type" is missing`);
    throw new FormatError(file, `model_type "${t}" is not supported by --config export (supported: ${SUPPORTED_MODEL_TYPES.join(', ')})`);
  }
  quantSchemeOf(raw as Record<string, unknown>, file);
  return row;
}

/**
 * HF `base_model_prefix` of families without a row yet, for the ONNX path's name lookup (a
 * legacy graph of any model converts); a family's row replaces its entry here.
 */
const OTHER_KEY_PREFIXES: Readonly<Record<string, string>> = {
  bloom: 'transformer',
  // the embedding encoders (export/embedding/): checkpoints saved from a task head hold `bert.…` / `roberta.…`
  bert: 'bert',
  'xlm-roberta': 'roberta',
  roberta: 'roberta',
};

/** The module a config's trunk keys live under (HF `base_model_prefix`): the row's, else `model`. */
export function keyPrefixOf(config: unknown): string {
  const row = familyOfConfig(config);
  if (row) return row.keyPrefix ?? 'model';
  const t = (config as { model_type?: unknown } | undefined)?.model_type;
  return (typeof t === 'string' ? OTHER_KEY_PREFIXES[t] : undefined) ?? 'model';
}

/** The tests' code-made configs of every family (`row.test.configs`), by name; names are global, so one used twice throws. */
export function familyTestConfigs(rows: readonly FamilyRow[] = FAMILIES): Record<string, TestConfig> {
  const out: Record<string, TestConfig> = {};
  for (const f of rows) {
    for (const [name, cfg] of Object.entries(f.test.configs ?? {})) {
      if (name in out) throw new Error(`family registry: test config "${name}" is named twice`);
      out[name] = cfg;
    }
  }
  return out;
}
