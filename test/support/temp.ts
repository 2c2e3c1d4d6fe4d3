/**
 * Temp directories for a test file: `const tmp = tempDirs('ws-x-')` gives a function that
 * makes a fresh directory under the OS temp dir each call; all of them are removed after the
 * file's tests (vitest `afterAll`, registered here).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';

/** A maker of fresh temp directories (`prefix` + random suffix), removed after the file's tests. */
export function tempDirs(prefix: string): () => string {
  const made: string[] = [];
  afterAll(() => {
    for (const d of made) fs.rmSync(d, { recursive: true, force: true });
  });
  return () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    made.push(d);
    return d;
  };
}
