/**
 * `<export dir>/compile.json`: what the last compile built and from which inputs. `run`
 * reads it to find the artifact; `compile` reads it to skip work when the input fingerprint
 * is unchanged.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';
import { atomicWriteFile } from '../paths';
import { readRegularFileSync } from '../paths';

/** File name of the record in the export directory. */
export const COMPILE_RECORD = 'compile.json';

/** The compile backends. */
export type CompileBackend = 'ort' | 'qaic';

/** Cheap stand-ins for the fingerprint (status.ts): file → `size:mtime:inode`, spec path → its real path. */
export interface CompileStamps {
  files: Record<string, string>;
  links: Record<string, string>;
}

const recordSchema = z.looseObject({
  version: z.literal(1),
  backend: z.enum(['ort', 'qaic']),
  fingerprint: z.string().min(1),
  inputs: z.looseObject({ graph: z.string(), spec: z.string(), prepared: z.string(), options: z.string() }),
  artifacts: z.looseObject({ model: z.string().optional(), qpc: z.string().optional(), compileDir: z.string().optional(), onnx: z.string().optional() }),
  prepared: z.string().optional(),
  command: z.array(z.string()).optional(),
  stats: z.looseObject({ weightBytes: z.number(), artifactBytes: z.number(), initializers: z.number() }).optional(),
  verified: z.boolean().optional(),
  stamps: z.object({ files: z.record(z.string(), z.string()), links: z.record(z.string(), z.string()) }).optional(),
  createdAt: z.string(),
});

/**
 * The record `compile` writes (version 1): `fingerprint` is sha256 over every input that
 * decides the artifact (fingerprint.ts) and `inputs` its parts, so a reader can tell what
 * changed; `artifacts` are absolute paths (`model` is the runnable ONNX of the ort backend);
 * `prepared` the checkpoint directory bound; `command` the qaic command line; `stats` the
 * weight bytes bound and the artifact's own size; `verified` says ONNX Runtime opened the
 * artifact at compile time; `stamps` let status.ts skip reading the inputs.
 */
export type CompileRecord = z.infer<typeof recordSchema>;

/** sha256 hex of bytes or text. */
export function sha256(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Reads the record, or `undefined` when absent or unreadable (a broken record just means "recompile"). */
export function readCompileRecord(exportDir: string): CompileRecord | undefined {
  try {
    const r = recordSchema.safeParse(JSON.parse(readRegularFileSync(path.join(exportDir, COMPILE_RECORD), 'utf8')));
    if (r.success) return r.data;
  } catch {
    /* absent or corrupt */
  }
  return undefined;
}

/** Writes the record atomically (temp + rename). */
export async function writeCompileRecord(exportDir: string, rec: CompileRecord): Promise<void> {
  await atomicWriteFile(path.join(exportDir, COMPILE_RECORD), JSON.stringify(rec, null, 2) + '\n');
}
