/**
 * `<export dir>/compile.json`: what the last compile built and from which inputs — the one
 * reader and writer, through the zod schema. compile/inputs.ts `readCompileRecord` adds the
 * trust check of compile-artifact.ts (an artifact compile did not make is never loaded); `run`,
 * the editor and the server read it there.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { PathPolicyError, atomicWriteFile, readJsonTextSync } from '../paths';

/** File name of the record in the export directory. */
export const COMPILE_RECORD = 'compile.json';

/** The compile backends. */
export type CompileBackend = 'ort' | 'qaic';

/** Cheap stand-ins for the fingerprint (compile/inputs.ts `recordHolds`): file → `size:mtime:inode`, spec path → its real path. */
export interface CompileStamps {
  files: Record<string, string>;
  links: Record<string, string>;
}

const recordSchema = z.looseObject({
  version: z.literal(1),
  backend: z.enum(['ort', 'qaic']),
  fingerprint: z.string().min(1),
  inputs: z.looseObject({ graph: z.string(), spec: z.string(), prepared: z.string(), options: z.string() }),
  artifacts: z.looseObject({
    model: z.string().optional(),
    qpc: z.string().optional(),
    compileDir: z.string().optional(),
    onnx: z.string().optional(),
  }),
  prepared: z.string().optional(),
  command: z.array(z.string()).optional(),
  stats: z.looseObject({ weightBytes: z.number(), artifactBytes: z.number(), initializers: z.number() }).optional(),
  verified: z.boolean().optional(),
  stamps: z.object({ files: z.record(z.string(), z.string()), links: z.record(z.string(), z.string()) }).optional(),
  createdAt: z.string(),
});

/**
 * The record `compile` writes (version 1): `fingerprint` is sha256 over every input that
 * decides the artifact (compile/decide.ts) and `inputs` its parts, so a reader can tell what
 * changed; `artifacts` are absolute paths (`model` is the runnable ONNX of the ort backend);
 * `prepared` the checkpoint directory bound; `command` the qaic command line; `stats` the
 * weight bytes bound and the artifact's own size; `verified` says ONNX Runtime opened the
 * artifact at compile time; `stamps` let compile skip reading the inputs.
 */
export type CompileRecord = z.infer<typeof recordSchema>;

/** Parses compile.json's text; undefined when it is not JSON or not a record. */
export function parseCompileRecord(text: string): CompileRecord | undefined {
  try {
    const r = recordSchema.safeParse(JSON.parse(text));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}

/** Reads `<exportDir>/compile.json` without the trust check; undefined when absent or invalid. */
export function readCompileRecordFile(exportDir: string): CompileRecord | undefined {
  try {
    return parseCompileRecord(readJsonTextSync(path.join(exportDir, COMPILE_RECORD)));
  } catch {
    return undefined;
  }
}

/**
 * Refuses to replace `<exportDir>/compile.json` when it is a symlink or not a regular file:
 * the rename of an atomic write would swap the link for a regular file (outputs never replace
 * a symlink, docs/SAFETY.md). compile asks before it writes anything.
 */
export function checkRecordWritable(exportDir: string): void {
  const file = path.join(exportDir, COMPILE_RECORD);
  let st: fs.Stats;
  try {
    st = fs.lstatSync(file);
  } catch {
    return; // absent: written fresh
  }
  if (st.isSymbolicLink())
    throw new PathPolicyError(
      'write-through-symlink',
      file,
      'is a symlink; compile never replaces a link with its record (remove the link)',
    );
  if (!st.isFile()) throw new PathPolicyError('overwrite-refused', file, 'is not a regular file; refusing to replace it');
}

/** Writes the record atomically (temp + rename), never over a symlink ({@link checkRecordWritable}). */
export async function writeCompileRecord(exportDir: string, rec: CompileRecord): Promise<void> {
  checkRecordWritable(exportDir);
  await atomicWriteFile(path.join(exportDir, COMPILE_RECORD), JSON.stringify(rec, null, 2) + '\n');
}
