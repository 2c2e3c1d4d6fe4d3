/**
 * The input fingerprint of a compile: graph bytes, the spec's parsed content, the prepared checkpoint (its
 * manifest and the size/mtime/inode of every file bound) and the backend options. Equal
 * fingerprint and an existing artifact mean the compile can be skipped. Hashing a
 * weight-free graph of a few megabytes takes milliseconds; weight bytes are never read —
 * the prepare manifest (rewritten by every prepare) and the shard stats stand for them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { statStamp } from '../file-stamp';
import type { ExportInputs, PreparedLocation } from './locate';
import { MANIFEST_FILE, SENTINEL_FILE } from '../prepare/manifest';
import { sha256, type CompileRecord } from './record';
import { readRegularFileSync } from '../paths';
import { pyJsonDumps } from '../spec/py-json';

/** Bump when the artifact layout changes, so old compiles are redone. */
export const COMPILE_FORMAT = 'weight-spec-compile/2';

/** `size:mtime:inode` of a file, or `-` when it cannot be stat'ed. */
export function stampOf(file: string): string {
  try {
    return statStamp(fs.statSync(file));
  } catch {
    return '-';
  }
}

/** The parts and the whole. */
export interface Fingerprint {
  parts: CompileRecord['inputs'];
  value: string;
}

/** State of the prepared directory that decides the artifact. */
export function preparedState(loc: PreparedLocation): Record<string, unknown> {
  let manifest: string | null;
  try {
    manifest = sha256(readRegularFileSync(path.join(loc.dir, MANIFEST_FILE)));
  } catch {
    manifest = null;
  }
  const sentinel = fs.existsSync(path.join(loc.dir, SENTINEL_FILE));
  const files = loc.files.map((f, i) => {
    const st = fs.statSync(f);
    return { rel: loc.rel[i], size: st.size, mtimeMs: st.mtimeMs, ino: st.ino };
  });
  return { dir: loc.dir, manifest, sentinel, files };
}

/** The options part of the fingerprint: format version, backend and backend options. Reads no file. */
export function optionsPart(backend: string, options: unknown): string {
  return sha256(JSON.stringify({ format: COMPILE_FORMAT, backend, options }));
}

/** Computes the fingerprint of one compile. `options` must be plain JSON in a stable key order. */
export function computeFingerprint(inp: ExportInputs, loc: PreparedLocation, backend: string, options: unknown): Fingerprint {
  // The graph by its bytes plus mtime (`touch model.onnx` recompiles); the spec by what it says,
  // so saving it with another indentation or a trailing newline leaves the compile up to date.
  const mtime = (f: string) => fs.statSync(f).mtimeMs;
  const parts = {
    graph: sha256(`${sha256(inp.onnxBytes)}:${mtime(inp.onnxPath)}`),
    spec: specContentHash(inp.specText),
    prepared: sha256(JSON.stringify(preparedState(loc))),
    options: optionsPart(backend, options),
  };
  return { parts, value: sha256(`${parts.graph}\n${parts.spec}\n${parts.prepared}\n${parts.options}`) };
}

/**
 * The hash of a spec's content: its JSON re-serialized compactly with sorted keys, so
 * whitespace, key order and a trailing newline do not count. Text that does not parse is
 * hashed as it is (compile reports the parse error anyway).
 */
export function specContentHash(text: string): string {
  let canonical: string;
  try {
    canonical = pyJsonDumps(JSON.parse(text), { separators: [',', ':'], sortKeys: true });
  } catch {
    canonical = text;
  }
  return sha256(`spec-content:${canonical}`);
}

/** Names the inputs that differ between a record and a new fingerprint (empty when there is no record). */
export function changedParts(rec: CompileRecord | undefined, fp: Fingerprint): string[] {
  if (!rec) return [];
  const out: string[] = [];
  for (const k of ['graph', 'spec', 'prepared', 'options'] as const) if (rec.inputs?.[k] !== fp.parts[k]) out.push(k);
  return out;
}
