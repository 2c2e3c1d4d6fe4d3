/**
 * `weight-spec check <weight_spec.json> [--json]`: the language server's diagnostics,
 * headless. Text output is one `file:line:col: severity [code] message` per problem; JSON
 * output is an array of `{code, severity, message, path, range}` (range = text offsets, or
 * null). Exit 1 when any problem is an error.
 */
import fs from 'node:fs';
import path from 'node:path';
import { UsageError, type Problem } from '../../errors';
import { defineCommand, println } from '../command';
import { MAX_JSON_BYTES, readInputFile } from '../../paths';
import { exportGraphDirs, specFileIn } from '../../spec/file-names';
import { requireModelPath, requirePath } from '../input-paths';

const isDirectory = (p: string) => {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
};

/** Line and column (both 1-based) of a text offset. */
export function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    start = i + 1;
  }
  return { line, column: offset - start + 1 };
}

/** The JSON output shape of one problem (the CLI contract). */
export function problemJson(p: Problem): {
  code: string;
  severity: string;
  message: string;
  path: (string | number)[];
  range: { start: number; end: number } | null;
} {
  return {
    code: p.code,
    severity: p.severity,
    message: p.message,
    path: p.path,
    range: p.range ? { start: p.range.start, end: p.range.end } : null,
  };
}

/** The spec file `given` names (a file, or an export directory's spec) and how to show it. */
function singleTarget(cwd: string, arg: string, given: string): { file: string; shown: string } {
  const file = (isDirectory(given) && specFileIn(given)) || requirePath(cwd, arg, 'file');
  // Shown as given; for a directory, the spec file in it.
  return { file, shown: file === given || !isDirectory(given) ? arg : path.join(arg, path.basename(file)) };
}

/** The `check` command. */
export const checkCommand = defineCommand({
  name: 'check',
  summary: 'check a weight_spec.json against its checkpoint files and companion ONNX',
  synopsis: ['check <weight_spec.json | export dir | VLM export dir> [--json] [--root <dir>]... [--onnx <model.onnx> | --no-onnx]'],
  details: [
    'An export directory stands for the weight_spec.json (or single *.weight_spec.json) in it;',
    'a VLM export directory (vlm.json + vision/ + language/) or a Whisper export directory (whisper.json +',
    'encoder/ + decoder/) for both of its specs.',
    'Paths in the spec resolve relative to its directory and must stay inside the allowed roots',
    "(the spec's directory plus every --root). Exit 1 when any error is found.",
  ],
  flags: {
    json: { type: 'boolean', description: 'print the problems as a JSON array' },
    root: {
      type: 'string',
      multiple: true,
      placeholder: '<dir>',
      description: 'also allow files below this directory (or a Hub id org/name[@rev]: its snapshot in the HF cache)',
    },
    onnx: { type: 'string', placeholder: '<model.onnx>', description: 'companion ONNX to check against (default: found beside the spec)' },
    'no-onnx': { type: 'boolean', description: 'skip the checks against the companion ONNX' },
  },
  positionals: { min: 1, max: 1, names: ['weight_spec.json'] },
  async run(args, io) {
    // loaded on use: `weight-spec prepare` (and --help) need not initialize this command's modules
    const [{ checkSpec }, { specTextOf }] = await Promise.all([import('../../check'), import('../../spec')]);
    // An export directory holding a spec means that spec (as compile and run take the directory);
    // a VLM export (vlm.json + vision/ + language/) or a Whisper export (whisper.json + encoder/ +
    // decoder/) means both of its graphs' specs.
    const given = path.resolve(io.cwd, args.positionals[0]!);
    const vlm = isDirectory(given) && !specFileIn(given) ? exportGraphDirs(given) : undefined;
    const targets: { file: string; shown: string }[] = vlm?.length
      ? vlm.map(([g, dir]) => {
          const file = specFileIn(dir)!;
          return { file, shown: path.join(args.positionals[0]!, g, path.basename(file)) };
        })
      : [singleTarget(io.cwd, args.positionals[0]!, given)];
    const roots = args.flags.root.map((r) => requireModelPath(io.cwd, r, { env: io.env }).path);
    const onnx = args.flags['no-onnx'] ? false : args.flags.onnx !== undefined ? path.resolve(io.cwd, args.flags.onnx) : undefined;
    if (onnx && targets.length > 1)
      throw new UsageError('check: --onnx names one graph; a VLM export folder has two (check vision/ and language/ one by one)');
    let errors = 0;
    const json: (ReturnType<typeof problemJson> & { file?: string })[] = [];
    for (const { file, shown } of targets) {
      const text = specTextOf(await readInputFile(file, shown, MAX_JSON_BYTES), file);
      // a root may be a Hub id: its snapshot in the local HF cache (files there are symlinks to blobs)
      const problems = await checkSpec(file, text, { roots, ...(onnx !== undefined ? { onnx } : {}) });
      const e = problems.filter((p) => p.severity === 'error').length;
      errors += e;
      if (args.flags.json) {
        // One spec: the array of problems (the contract); a VLM export: each problem names its spec.
        json.push(...problems.map((p) => (targets.length > 1 ? { ...problemJson(p), file: shown } : problemJson(p))));
        continue;
      }
      for (const p of problems) {
        const at = p.range ? lineColumn(text, p.range.start) : { line: 1, column: 1 };
        println(io.stdout, `${shown}:${at.line}:${at.column}: ${p.severity} [${p.code}] ${p.message}`);
      }
      const warnings = problems.length - e;
      println(
        io.stdout,
        problems.length === 0
          ? `${shown}: ok`
          : `${shown}: ${e} error${e === 1 ? '' : 's'}, ${warnings} warning${warnings === 1 ? '' : 's'}`,
      );
    }
    if (args.flags.json) println(io.stdout, JSON.stringify(json, null, 2));
    return errors > 0 ? 1 : 0;
  },
});
