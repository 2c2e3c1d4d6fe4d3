/**
 * Lenient reads of the tool's JSON files for editor state (spec-state, workspace-trust): a file
 * that is missing or does not parse, and a field that is not an object, read as nothing rather
 * than throwing, since the editor asks while files are still being written. The files are
 * still input (a repository can ship `compile.json -> /dev/zero` or a FIFO): they go through
 * the read policy, so such a file reads as nothing at once instead of hanging the server.
 */
import { readJsonTextSync } from '../paths';

/** `file` parsed, or undefined when it cannot be read or parsed. */
export function readJsonLoose(file: string): unknown {
  try {
    return JSON.parse(readJsonTextSync(file));
  } catch {
    return undefined;
  }
}

/** `v` as a record, or an empty one when it is not an object. */
export const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' ? (v as Record<string, unknown>) : {});
