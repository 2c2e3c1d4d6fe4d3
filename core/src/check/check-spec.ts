/**
 * Spec diagnostics against the real files: the check behind `weight-spec check` and the
 * language server. Problems are data with stable codes and source ranges; nothing here
 * throws for bad input (only an abort of the signal rejects).
 *
 * Passes: schema (from the parser) → files (path policy, existence, safetensors header) →
 * inputs (file index, key present, key in another file, duplicate names, v1 dtype/shape
 * facts) → prepared directories → companion ONNX (names, unmapped inputs, dtype/shape).
 */
import path from 'node:path';
import { FormatError, oneLine, type Problem } from '../errors';
import { problem } from '../problem-codes';
import { tryResolveReadPath } from '../paths';
import { specFileResolver } from '../artifacts/spec-files';
import { parseSpecText, type ParsedSpec } from '../spec/parse';
import type { InputSource, SpecInput } from '../spec/types';
import type { OnnxSummary } from '../formats/onnx';
import { storedKey, type SafetensorsHeader } from '../formats/safetensors';
import { checkCompanionOnnx } from './check-onnx';
import { fileLabel, PREPARE_HINT, report, throwIfAborted, type CheckContext, type CheckOptions, type FileState } from './context';
import { defaultHeaderCache } from './header-cache';
import { planMissingPrepared, plannedNote } from './planned';
import { checkPrepared, looksPrepared } from './prepared';
import { didYouMean, KeyIndex, keyIndexOf } from './suggest';
import { checkInputFacts, statesFacts } from './facts';
import { checkQuantization } from './quantization';

/**
 * Checks spec `text` (the content of `specFile`, possibly unsaved) against the checkpoint
 * files it names and its companion ONNX. Resolves to every problem found, in document order.
 */
export async function checkSpec(specFile: string, text: string, opts: CheckOptions = {}): Promise<Problem[]> {
  return (await checkParsedSpec(specFile, parseSpecText(text, specFile), opts)).problems;
}

/** What one check found, with the facts it read (for hover, completion and inlay hints). */
export interface CheckRun {
  problems: Problem[];
  parsed: ParsedSpec;
  /** Per `files[]` entry: absolute path and header when readable (empty without a spec). */
  files: FileState[];
  /** The companion ONNX that was checked against, and its summary when readable. */
  onnx?: { file: string; summary?: OnnxSummary };
}

/**
 * {@link checkSpec} on an already parsed document (the language server re-uses or patches
 * the previous parse, see session.ts). Same passes, same problems.
 */
export async function checkParsedSpec(specFile: string, parsed: ParsedSpec, opts: CheckOptions = {}): Promise<CheckRun> {
  if (!parsed.spec || !parsed.sources) return { problems: sortProblems(parsed.problems), parsed, files: [] };
  const specDir = path.dirname(path.resolve(specFile));
  const ctx: CheckContext = {
    specFile: path.resolve(specFile),
    specDir,
    parsed,
    spec: parsed.spec,
    sources: parsed.sources,
    roots: opts.roots ?? [],
    cache: opts.cache ?? defaultHeaderCache,
    signal: opts.signal,
    files: [],
    problems: [...parsed.problems],
  };
  let onnx: CheckRun['onnx'];
  try {
    await checkFiles(ctx);
    throwIfAborted(ctx);
    await planMissingPrepared(ctx);
    throwIfAborted(ctx);
    checkInputs(ctx);
    checkQuantization(ctx);
    await checkPrepared(ctx);
    throwIfAborted(ctx);
    if (opts.onnx !== false) onnx = await checkCompanionOnnx(ctx, opts.onnx);
  } catch (err) {
    if (opts.signal?.aborted) throw err;
    // A bug in a pass must not hide what was found so far, nor crash the server.
    ctx.problems.push(problem('internal', `check failed: ${oneLine(err)}`, []));
  }
  return { problems: sortProblems(ctx.problems), parsed, files: ctx.files, ...(onnx ? { onnx } : {}) };
}

function sortProblems(problems: Problem[]): Problem[] {
  return problems
    .map((p, i) => ({ p, i }))
    .sort((a, b) => (a.p.range?.start ?? -1) - (b.p.range?.start ?? -1) || a.i - b.i)
    .map((x) => x.p);
}

/**
 * Resolves, stats and reads the header of every `files[]` entry. The reads of all shards are
 * started together (their I/O overlaps); results are taken in `files[]` order.
 */
async function checkFiles(ctx: CheckContext): Promise<void> {
  const reads: (Promise<SafetensorsHeader> | undefined)[] = [];
  const resolver = specFileResolver(ctx.specDir); // reads the export report once, when needed
  for (const [i, f] of ctx.spec.files.entries()) {
    throwIfAborted(ctx);
    const src = ctx.sources.files[i]!;
    const state: FileState = {};
    ctx.files.push(state);
    if (f.format.toLowerCase() !== 'safetensors') {
      report(ctx, 'file-format', src.format ?? src.path, `files[${i}]: format "${f.format}" is not supported (only "safetensors")`);
      continue;
    }
    const resolved = tryResolveReadPath(ctx.specDir, f.path, ctx.roots);
    if (!resolved.ok) {
      report(ctx, resolved.error.code, src.path, resolved.error.message);
      continue;
    }
    state.abs = resolved.value.abs;
    if (resolved.value.viaSymlink) state.real = resolved.value.real;
    // Export links the prepared folder only once it exists: until a prepare or compile links
    // it, the file lies (or will lie, once prepared) in the folder the export's report names
    // (compile's model_id) — where the server watches for prepare to write it.
    const loc = resolver.file(f.path, { abs: resolved.value.abs, exists: resolved.value.exists });
    const exists = loc.exists;
    if (loc.viaReport) {
      state.abs = loc.abs;
      state.viaReport = true;
      if (exists) state.real = state.abs;
    }
    if (!exists) {
      if (looksPrepared(state.abs)) {
        // A normal state between export and prepare, not a broken spec: a warning (its keys
        // are still checked, against prepare's plan: see planned.ts).
        // Reported once for all such shards, after this loop (one warning per spec, not per shard).
        state.missingPrepared = true;
      } else {
        report(ctx, 'file-missing', src.path, `file not found: ${f.path}`, { resolved: state.abs });
      }
      continue;
    }
    const read = ctx.cache.header(state.abs);
    read.catch(() => undefined); // handled below; an abort must not leave it unobserved
    reads[i] = read;
  }
  reportNotPrepared(ctx);
  for (const [i, f] of ctx.spec.files.entries()) {
    const read = reads[i];
    if (!read) continue;
    throwIfAborted(ctx);
    const src = ctx.sources.files[i]!;
    const state = ctx.files[i]!;
    try {
      state.header = await read;
    } catch (err) {
      if (err instanceof FormatError) {
        report(
          ctx,
          'file-not-safetensors',
          src.path,
          `not a valid safetensors file (${err.detail}${err.byte !== undefined ? `, at byte ${err.byte}` : ''}): ${f.path}`,
        );
      } else {
        report(ctx, 'file-unreadable', src.path, `cannot read the file (${oneLine(err)}): ${f.path}`);
      }
    }
  }
}

/**
 * One `not-prepared` warning per spec, on `files`, for every shard of a prepared checkpoint that
 * does not exist yet (issue 36: 50 shards were 50 identical warnings): the count, what to do and
 * the folder. `data.files` lists their indices. No related information per shard: VS Code's
 * Problems panel shows each related entry as a row of its own, so a 75-shard spec was 76 rows
 * (issue 50); the folder in the message says where they all are.
 */
function reportNotPrepared(ctx: CheckContext): void {
  const missing = ctx.files.flatMap((s, i) => (s.missingPrepared ? [i] : []));
  if (missing.length === 0) return;
  const total = ctx.spec.files.length;
  const paths = missing.map((i) => ctx.spec.files[i]!.path);
  const dirs = [...new Set(paths.map((p) => path.posix.dirname(p.replace(/\\/g, '/'))))];
  const where = dirs.length === 1 ? `${dirs[0]}/` : `${paths[0]} and ${paths.length - 1} more`;
  const count =
    missing.length === 1 && total === 1
      ? 'its file'
      : missing.length === total
        ? `all ${total} shards`
        : `${missing.length} of ${total} shards`;
  report(
    ctx,
    'not-prepared',
    ['files'],
    `not prepared yet: the prepared checkpoint does not exist (${count} missing); ${PREPARE_HINT}: ${where}`,
    {
      files: missing,
    },
  );
}

/** File index, key presence and name uniqueness for every input. */
function checkInputs(ctx: CheckContext): void {
  const names = new Set<string>();
  /** The first input of each name: made only once a name repeats (see {@link firstOfName}). */
  let firstByName: Map<string, number> | undefined;
  // Full edit-distance scans over a file's keys are rationed; index lookups are not.
  const suggestionsBudget = { left: 10 };
  // An input's source paths are made on demand (inputs.at allocates): only for a problem.
  const src = (i: number) => ctx.sources.inputs.at(i)!;
  const inputs = ctx.spec.inputs;
  // Indexed, not entries(): this loop runs once per input in a fresh server, much of it before
  // the engine compiles it, where each iterator step and its [i, input] pair are allocations.
  for (let i = 0; i < inputs.length; i++) {
    const input = inputs[i]!;
    checkKey(ctx, i, input, suggestionsBudget, src);
    // After the key: a name equal to its key is the header's string by now, whose hash the
    // header's map already computed. One set operation per name; the first input of a repeated
    // name is looked up only when one repeats.
    const count = names.size;
    if (names.add(input.name).size !== count) continue;
    firstByName ??= firstOfName(inputs);
    const prev = firstByName.get(input.name)!;
    report(ctx, 'duplicate-name', src(i).name, `duplicate input name "${input.name}" (first used by inputs[${prev}])`, { first: prev });
  }
}

/** The index of the first input of every name. */
function firstOfName(inputs: readonly SpecInput[]): Map<string, number> {
  const first = new Map<string, number>();
  for (let i = 0; i < inputs.length; i++) if (!first.has(inputs[i]!.name)) first.set(inputs[i]!.name, i);
  return first;
}

/** Input `i`'s file index and key (see {@link checkInputs}); a found key becomes the header's own string. */
function checkKey(
  ctx: CheckContext,
  i: number,
  input: SpecInput,
  suggestionsBudget: { left: number },
  src: (i: number) => InputSource,
): void {
  const fi = input.location.file;
  if (fi >= ctx.spec.files.length) {
    const n = ctx.spec.files.length;
    report(
      ctx,
      'file-index',
      src(i).file,
      `inputs[${i}].location.file is ${fi} but the spec lists ${n} file${n === 1 ? '' : 's'} (valid: ${n === 0 ? 'none' : `0..${n - 1}`})`,
    );
    return;
  }
  if (fi < 0) {
    checkUnindexedKey(ctx, i, suggestionsBudget);
    return;
  }
  const header = ctx.files[fi]?.header;
  if (!header) return; // the file itself is already reported
  const key = input.location.key;
  // The header's own string, without making the tensor's object (a header read from a file
  // keeps its tensors in columns, see tensor-table.ts; its objects are made only when read).
  const stored = storedKey(header.tensors, key);
  if (stored !== undefined) {
    // One string object for the key, the header's: the spec's equal copies (key, and the
    // name when it is the key) are let go — on a 20 000-input spec, 1 MiB of the server's heap.
    if (input.name === key) input.name = stored;
    input.location.key = stored;
    if (statesFacts(input)) checkInputFacts(ctx, i, header.tensors.get(key)!);
    return;
  }
  const other = ctx.files.findIndex((s) => s.header?.tensors.has(key));
  if (other >= 0) {
    report(
      ctx,
      'key-in-other-file',
      src(i).key,
      `key "${key}" is in files[${other}], not files[${fi}]: set location.file to ${other} (files[${other}] is ${fileLabel(ctx, other)})`,
      { file: other },
    );
    return;
  }
  const index = keyIndexOf(header.tensors, () => header.tensors.keys());
  const suggestions = index.closest(key, 3, () => suggestionsBudget.left-- > 0);
  report(
    ctx,
    'key-missing',
    src(i).key,
    // The problem and the fix first (Problems cuts long rows), the file and the plan last.
    `key "${key}" not found${didYouMean(suggestions)} (in ${fileLabel(ctx, fi)}${plannedNote(ctx, fi)})`,
    {
      suggestions,
    },
  );
}

/** v1 inputs without a file index (several files): the key must be in some file. */
function checkUnindexedKey(ctx: CheckContext, i: number, budget: { left: number }): void {
  const input = ctx.spec.inputs[i]!;
  const key = input.location.key;
  const holder = ctx.files.findIndex((s) => s.header?.tensors.has(key));
  if (holder >= 0) {
    checkInputFacts(ctx, i, ctx.files[holder]!.header!.tensors.get(key)!);
    return;
  }
  if (ctx.files.some((s) => !s.header)) return; // an unreadable file may hold it
  const all = ctx.files.flatMap((s) => [...s.header!.tensors.keys()]);
  const suggestions = new KeyIndex(all).closest(key, 3, () => budget.left-- > 0);
  report(ctx, 'key-missing', ctx.sources.inputs.at(i)!.key, `key "${key}" is in none of the spec's files${didYouMean(suggestions)}`, {
    suggestions,
  });
}
