/**
 * A recording `qaic-compile` for the qaic parity tests (qaic-recording-parity,
 * qaic-recording-vlm): a shell script that stands in for the compiler, saving its argv and the
 * specialization and custom-IO files it is handed, then writing programqpc.bin where it is told.
 */
import fs from 'node:fs';
import path from 'node:path';

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
