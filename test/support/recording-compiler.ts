/**
 * A recording `qaic-compile` for the qaic parity tests (qaic-recording-parity,
 * qaic-recording-vlm, qaic-mdp, serving-disagg…): a shell script that stands in for the compiler,
 * saving its argv and the specialization and custom-IO files it is handed, then writing
 * programqpc.bin where it is told; and the harness those tests share around it (a prepared copy
 * of a fixture, `compile --backend qaic` through the stand-in, the comparison with what
 * QEfficient would have written).
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, expect } from 'vitest';
import { cliInProcess, type CliRun } from './cli';
import { fixturesDir } from './fixtures';

/**
 * Writes the stand-in compiler to `<dir>/qaic-compile` and returns its path. Each call records
 * into `record` (emptied first): argv one per line in `argv`, each file it is handed copied by
 * base name. With `perGraph`, into `record/<g>` instead, `g` the folder of its `-m` ONNX (a VLM
 * export's vision / language).
 */
export function recordingCompiler(dir: string, record: string, perGraph = false): string {
  const bin = path.join(dir, 'qaic-compile');
  fs.writeFileSync(
    bin,
    [
      '#!/bin/sh',
      ...(perGraph
        ? ['for a in "$@"; do case "$a" in -m=*) g=$(basename "$(dirname "${a#-m=}")");; esac; done', `rec='${record}'/"$g"`]
        : [`rec='${record}'`]),
      'rm -rf "$rec"; mkdir -p "$rec"',
      `printf '%s\\n' "$@" > "$rec/argv"`,
      'for a in "$@"; do',
      '  case "$a" in',
      '    -network-specialization-config=*|-custom-IO-list-file=*) f="${a#*=}"; cp "$f" "$rec/$(basename "$f")";;',
      '    -aic-binary-dir=*) d="${a#-aic-binary-dir=}"; mkdir -p "$d"; echo qpc > "$d/programqpc.bin";;',
      '  esac',
      'done',
      '',
    ].join('\n'),
    { mode: 0o755 },
  );
  return bin;
}

/** A fixture prepared under a work folder, compiled through the recording compiler. */
export interface RecordingFixture {
  /** The work folder (made in beforeAll: read these inside tests). */
  root: () => string;
  /** `<root>/<fixture>`: the fixture's copy, prepared as float32. */
  model: () => string;
  /** The stand-in compiler. */
  bin: () => string;
  /** Where it records what it was handed. */
  record: () => string;
  /** `export --config <model> --out <out> <flags…>` in the work folder; expects exit 0. */
  exportTo: (out: string, flags: string[]) => Promise<void>;
  /**
   * `compile <out> --backend qaic <flags…>` through the stand-in; qaic-util points at a missing
   * file, so no device is queried (the hardware comes from the flags or the default).
   */
  compile: (out: string, flags: string[]) => Promise<CliRun>;
}

/**
 * Registers the beforeAll that copies `fixtures/<fixture>` into a fresh work folder (`tmp()`),
 * writes the recording compiler beside it and prepares the copy as float32 (a copy, so the
 * prepared checkpoint lands in the work folder, not in the shared fixtures).
 */
export function recordingFixture(tmp: () => string, fixture: string): RecordingFixture {
  let root = '';
  beforeAll(async () => {
    root = tmp();
    fs.cpSync(path.join(fixturesDir(), fixture), path.join(root, fixture), { recursive: true });
    recordingCompiler(root, path.join(root, 'record'));
    const r = await cliInProcess(['prepare', '--checkpoint', path.join(root, fixture), '--dtype', 'float32'], { cwd: root });
    expect(r.code, r.stderr).toBe(0);
  });
  const model = () => path.join(root, fixture);
  const bin = () => path.join(root, 'qaic-compile');
  return {
    root: () => root,
    model,
    bin,
    record: () => path.join(root, 'record'),
    exportTo: async (out, flags) => {
      const r = await cliInProcess(['export', '--config', model(), '--out', out, ...flags], { cwd: root });
      expect(r.code, r.stderr).toBe(0);
    },
    compile: (out, flags) =>
      cliInProcess(['compile', out, '--backend', 'qaic', ...flags], {
        cwd: root,
        env: { WEIGHT_SPEC_QAIC_COMPILE: bin(), WEIGHT_SPEC_QAIC_UTIL: path.join(root, 'none') },
      }),
  };
}

/** The QPC folder a compile run names (`-aic-binary-dir=<qpc>/qpc` in the argv it prints). */
export function qpcOf(r: CliRun): string {
  return /-aic-binary-dir=(\S+)\/qpc$/m.exec(r.stderr + r.stdout)![1]!;
}

/**
 * The stand-in compiler was handed what QEfficient's `_compile` hands qaic-compile (`want`, from
 * test/support/qeff-qaic-rules.ts): the same argv, specializations.json and custom_io.yaml, and
 * `<qpc>/hashed_compile_params.json` is QEfficient's. Returns that file's text.
 */
export function expectRecordedAsQeff(
  record: string,
  qpc: string,
  want: { argv: string[]; specializations: string; custom_io: string; hashed: string },
): string {
  const read = (...parts: string[]) => fs.readFileSync(path.join(...parts), 'utf8');
  expect(read(record, 'argv').trim().split('\n')).toEqual(want.argv);
  expect(read(record, 'specializations.json')).toBe(want.specializations);
  expect(read(record, 'custom_io.yaml')).toBe(want.custom_io);
  const hashed = read(qpc, 'hashed_compile_params.json');
  expect(hashed).toBe(want.hashed);
  return hashed;
}
