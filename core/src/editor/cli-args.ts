/**
 * Argument lists for the bundled CLI (`dist/cli.js`), built in one place so that commands and
 * tasks run exactly what a user would type (the CLI contract: README.md, docs/CLI.md). Pure: no
 * `vscode` import, unit-tested in client/test.
 */
import { PREPARE_DTYPES, type ExportDtype, type PrepareDtype } from '../formats/dtype';

export type Backend = 'ort' | 'qaic';

/** `export --config <dir>` or `export --onnx <file> --checkpoint <dir>`. */
export interface ExportOptions {
  config?: string;
  onnx?: string;
  checkpoint?: string;
  out: string;
  dtype?: ExportDtype;
  ctxLen?: number;
}

/** `prepare --checkpoint <dir> --dtype …`. */
export interface PrepareOptions {
  checkpoint: string;
  dtype: PrepareDtype;
  out?: string;
  maxRamGb?: number;
  /** Expert-parallel packing: pipeline stages P and parallel experts E. */
  /** P pipeline stages; `experts` = N = E / P per stage (QEfficient's num_parallelized_experts; derived by the CLI when absent). */
  expertParallel?: { stages: number; experts?: number };
}

/** `compile <export dir> …`. */
export interface CompileArgOptions {
  exportDir: string;
  backend?: Backend;
  prepared?: string;
  force?: boolean;
}

/** `run <export dir> --input-ids …`. */
export interface RunOptions {
  target: string;
  inputIds: number[];
  maxNewTokens?: number;
  /** VLM exports: image files for the prompt, in prompt order (`--image`, repeated). */
  images?: string[];
}

export function exportArgs(o: ExportOptions): string[] {
  const a = ['export'];
  if (o.config !== undefined) a.push('--config', o.config);
  else if (o.onnx !== undefined) {
    a.push('--onnx', o.onnx);
    if (o.checkpoint !== undefined) a.push('--checkpoint', o.checkpoint);
  } else throw new Error('export needs a model folder (config.json) or an ONNX file');
  a.push('--out', o.out);
  if (o.config !== undefined && o.dtype) a.push('--dtype', o.dtype);
  if (o.config !== undefined && o.ctxLen !== undefined) a.push('--ctx-len', String(o.ctxLen));
  return a;
}

export function prepareArgs(o: PrepareOptions): string[] {
  const a = ['prepare', '--checkpoint', o.checkpoint, '--dtype', o.dtype];
  if (o.out) a.push('--out', o.out);
  if (o.maxRamGb !== undefined && o.maxRamGb > 0) a.push('--max-ram-gb', String(o.maxRamGb));
  if (o.expertParallel) {
    a.push('--moe-flavour', 'expert_parallel', '--pipeline-stages', String(o.expertParallel.stages));
    if (o.expertParallel.experts !== undefined) a.push('--parallel-experts', String(o.expertParallel.experts));
  }
  return a;
}

/** One row of Prepare's dtype picker. */
export interface DtypeChoice {
  label: PrepareDtype;
  description: string;
}

/**
 * Prepare's dtype picker: the spec's own dtype first (what its graph inputs expect; a lens
 * click confirms it here instead of preparing silently, issue 50), then the
 * `weightSpec.defaultDtype` setting, then the rest.
 */
export function prepareDtypeChoices(specDtype: string | undefined, defaultDtype: string): DtypeChoice[] {
  const rank = (d: string) => (d === specDtype ? 0 : d === defaultDtype ? 1 : 2);
  return [...PREPARE_DTYPES]
    .sort((a, b) => rank(a) - rank(b))
    .map((d) => {
      const why = [
        d === specDtype ? "the spec's dtype (its graph inputs)" : '',
        d === defaultDtype ? 'default (weightSpec.defaultDtype)' : '',
      ];
      return { label: d, description: why.filter(Boolean).join(' · ') };
    });
}

export function compileArgs(o: CompileArgOptions): string[] {
  const a = ['compile', o.exportDir];
  if (o.backend) a.push('--backend', o.backend);
  if (o.prepared) a.push('--prepared', o.prepared);
  if (o.force) a.push('--force');
  return a;
}

export function runArgs(o: RunOptions): string[] {
  const a = ['run', o.target, '--input-ids', o.inputIds.join(',')];
  if (o.maxNewTokens !== undefined) a.push('--max-new-tokens', String(o.maxNewTokens));
  for (const img of o.images ?? []) a.push('--image', img);
  return a;
}

/** `run <export dir> --prompt … | --chat … [--system …]`: text in, text out (the editor's Run Prompt). */
export interface RunPromptOptions {
  target: string;
  /** The text: a chat message (rendered with the model's chat template) or a plain prompt. */
  text: string;
  mode: 'chat' | 'prompt';
  system?: string;
  maxNewTokens?: number;
  images?: string[];
}

export function runPromptArgs(o: RunPromptOptions): string[] {
  const a = ['run', o.target, o.mode === 'chat' ? '--chat' : '--prompt', o.text];
  if (o.mode === 'chat' && o.system) a.push('--system', o.system);
  if (o.maxNewTokens !== undefined) a.push('--max-new-tokens', String(o.maxNewTokens));
  for (const img of o.images ?? []) a.push('--image', img);
  return a;
}

/** What `weight-spec run` reports about a generation (its stderr stats line). */
export interface RunStats {
  tokens: number;
  ttftMs: number;
  tokensPerSecond: number;
}

/**
 * The stats of `run`'s stderr: `run: N tokens; time to first token X ms, Y tokens/s (…)`, or for
 * a VLM `run: N tokens; time to first token X ms (vision + prefill), T ms total (vlm)` (tokens/s
 * is then N / T). Undefined when no such line is there.
 */
export function parseRunStats(stderr: string): RunStats | undefined {
  const text = /^run: (\d+) tokens?; time to first token ([\d.]+) ms,? ([^\n]*)$/m.exec(stderr);
  if (!text) return undefined;
  const tokens = Number(text[1]);
  const ttftMs = Number(text[2]);
  const rate = /^([\d.]+) tokens\/s/.exec(text[3]!);
  if (rate) return { tokens, ttftMs, tokensPerSecond: Number(rate[1]) };
  const total = /([\d.]+) ms total/.exec(text[3]!);
  if (!total || Number(total[1]) <= 0) return undefined;
  return { tokens, ttftMs, tokensPerSecond: tokens / (Number(total[1]) / 1000) };
}

/** Parses `3, 17,5` into token ids; undefined when any part is not a non-negative integer. */
export function parseTokenIds(text: string): number[] | undefined {
  const parts = text.split(/[\s,]+/).filter((s) => s !== '');
  if (parts.length === 0) return undefined;
  const ids = parts.map((p) => (/^\d+$/.test(p) ? Number(p) : NaN));
  return ids.every((n) => Number.isSafeInteger(n)) ? ids : undefined;
}

/** Validates expert-parallel P/E: positive integers, E divisible by P is the CLI's to check. */
export function parseExpertParallel(text: string): { stages: number; experts?: number } | undefined {
  const m = /^\s*(\d+)\s*(?:[/x,: ]\s*(\d+)\s*)?$/.exec(text);
  if (!m) return undefined;
  const stages = Number(m[1]);
  if (m[2] === undefined) return stages > 0 ? { stages } : undefined;
  const experts = Number(m[2]);
  return stages > 0 && experts > 0 ? { stages, experts } : undefined;
}

/** A `weight-spec` task definition as written in tasks.json. */
export interface WeightSpecTaskDefinition {
  type: 'weight-spec';
  command: 'export' | 'prepare' | 'compile';
  /** export: model folder with config.json. */
  config?: string;
  /** export: legacy ONNX (with `checkpoint`). */
  onnx?: string;
  /** prepare: source checkpoint; export --onnx: the checkpoint folder. */
  checkpoint?: string;
  /** compile: the export directory. */
  exportDir?: string;
  out?: string;
  dtype?: PrepareDtype;
  maxRamGb?: number;
  backend?: Backend;
  prepared?: string;
}

/** CLI arguments of a task definition; throws a one-line Error naming the missing field. */
export function taskArgs(
  d: WeightSpecTaskDefinition,
  defaults: { dtype?: PrepareDtype; maxRamGb?: number; backend?: Backend } = {},
): string[] {
  const need = (v: string | undefined, field: string): string => {
    if (!v) throw new Error(`weight-spec task "${d.command}" needs "${field}"`);
    return v;
  };
  switch (d.command) {
    case 'export': {
      const dtype = d.dtype ?? defaults.dtype;
      return exportArgs({
        ...(d.onnx ? { onnx: d.onnx, checkpoint: need(d.checkpoint, 'checkpoint') } : { config: need(d.config, 'config') }),
        out: need(d.out, 'out'),
        ...(dtype === 'float32' || dtype === 'float16' ? { dtype } : {}),
      });
    }
    case 'prepare':
      return prepareArgs({
        checkpoint: need(d.checkpoint, 'checkpoint'),
        dtype: d.dtype ?? defaults.dtype ?? 'float32',
        ...(d.out ? { out: d.out } : {}),
        ...((d.maxRamGb ?? defaults.maxRamGb) ? { maxRamGb: d.maxRamGb ?? defaults.maxRamGb } : {}),
      });
    case 'compile':
      return compileArgs({
        exportDir: need(d.exportDir, 'exportDir'),
        backend: d.backend ?? defaults.backend ?? 'ort',
        ...(d.prepared ? { prepared: d.prepared } : {}),
      });
    default:
      throw new Error(`weight-spec task: unknown command "${String((d as { command?: unknown }).command)}" (export, prepare or compile)`);
  }
}

/**
 * The CLI's one-line failure, `weight-spec: <file>: <message>` (also the problem matcher's
 * pattern in package.json — a unit test keeps the two equal).
 */
export const CLI_ERROR_PATTERN = '^weight-spec: (?:error: )?((?:/|[A-Za-z]:\\\\)[^:]+?): (.*)$';

/** Splits a CLI error line into file and message (undefined when it names no file). */
export function parseCliError(line: string): { file: string; message: string } | undefined {
  const m = new RegExp(CLI_ERROR_PATTERN).exec(line.trim());
  return m ? { file: m[1]!, message: m[2]! } : undefined;
}

/** Percentage in a CLI progress line (`prepare: 42% (…)`), else undefined. */
export function parseProgressLine(line: string): { label: string; percent: number; detail: string } | undefined {
  const m = /^([\w .-]+): (\d{1,3})% (.*)$/.exec(line.trim());
  if (!m) return undefined;
  const percent = Number(m[2]);
  return percent <= 100 ? { label: m[1]!, percent, detail: m[3]! } : undefined;
}
