/**
 * `<export dir>/compile.json`: what the last compile built and from which inputs. `run`
 * reads it to find the artifact; `compile` reads it to skip work when the input fingerprint
 * is unchanged.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { atomicWriteFile } from '../paths';

/** File name of the record in the export directory. */
export const COMPILE_RECORD = 'compile.json';

/** The record `compile` writes (version 1). */
export interface CompileRecord {
  version: 1;
  backend: 'ort' | 'qaic';
  /** sha256 over every input that decides the artifact (see `fingerprint.ts`). */
  fingerprint: string;
  /** The parts of the fingerprint, so a reader can tell what changed. */
  inputs: { graph: string; spec: string; prepared: string; options: string };
  /** Absolute paths of what was built. `model` is the runnable ONNX for the ort backend. */
  artifacts: { model?: string; qpc?: string; compileDir?: string; onnx?: string };
  /** The prepared checkpoint directory the weights come from. */
  prepared?: string;
  /** The command that was run (qaic). */
  command?: string[];
  /** Weight bytes bound and the artifact's own size, for the "no copy" claim. */
  stats?: { weightBytes: number; artifactBytes: number; initializers: number };
  /** ort: an ONNX Runtime session was created on the artifact at compile time. */
  verified?: boolean;
  createdAt: string;
}

/** sha256 hex of bytes or text. */
export function sha256(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Reads the record, or `undefined` when absent or unreadable (a broken record just means "recompile"). */
export function readCompileRecord(exportDir: string): CompileRecord | undefined {
  try {
    const rec = JSON.parse(fs.readFileSync(path.join(exportDir, COMPILE_RECORD), 'utf8')) as CompileRecord;
    if (rec && rec.version === 1 && typeof rec.fingerprint === 'string' && rec.artifacts) return rec;
  } catch {
    /* absent or corrupt */
  }
  return undefined;
}

/** Writes the record atomically (temp + rename). */
export async function writeCompileRecord(exportDir: string, rec: CompileRecord): Promise<void> {
  await atomicWriteFile(path.join(exportDir, COMPILE_RECORD), JSON.stringify(rec, null, 2) + '\n');
}
