/**
 * Temp directories for a test file: `const tmp = tempDirs('ws-x-')` gives a function that
 * makes a fresh directory under the OS temp dir each call; all of them are removed after the
 * file's tests (vitest `afterAll`, registered here). This is the one place tests make temp
 * directories: eslint.config.mjs forbids `mkdtemp*` and `os.tmpdir()` in tests elsewhere.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect } from 'vitest';

/**
 * A maker of fresh temp directories (`prefix` + random suffix, or the prefix given to the
 * call), removed after the file's tests. Call it at the top level of a test file (or of a
 * helper module a test file imports), where vitest accepts the `afterAll` it registers.
 * `under` puts them in another parent than the OS temp dir (e.g. /dev/shm, another filesystem).
 */
export function tempDirs(prefix: string, opts: { under?: string } = {}): (callPrefix?: string) => string {
  // vitest never runs an afterAll registered from inside a test (or a hook): the dirs would leak.
  if (expect.getState().currentTestName !== undefined) {
    throw new Error('tempDirs() called inside a test: call it at the top level of the file and call the maker it returns in the test');
  }
  const made: string[] = [];
  afterAll(() => {
    for (const d of made.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });
  return (callPrefix = prefix) => {
    const d = fs.mkdtempSync(path.join(opts.under ?? os.tmpdir(), callPrefix));
    made.push(d);
    return d;
  };
}
