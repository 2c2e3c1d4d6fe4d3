/**
 * vitest globalSetup: the whole run gets its own temp folder (TMPDIR, which `os.tmpdir()`,
 * the spawned CLI and its workers all follow), and the run fails when a test leaves anything
 * in it. Tests make temp dirs with `tempDirs()` (test/support/temp.ts), which removes them.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export default function setup(): () => void {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'weight-spec-tests-'));
  // mkdtemp makes it 0700; tests that run the CLI as an unprivileged user (cli-paths, as root)
  // must be able to pass through it to their own folder. Traverse only: nobody lists it.
  fs.chmodSync(root, 0o711);
  const previous = process.env.TMPDIR;
  process.env.TMPDIR = root;
  return () => {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
    // A test's leak is a folder or a file with data. Other programs on a machine drop empty
    // marker files and dotfiles into TMPDIR (seen here: `.ses`, `mat-debug-<pid>.log`): not ours.
    const left = fs.readdirSync(root).filter((n) => {
      if (n.startsWith('.')) return false;
      const st = fs.lstatSync(path.join(root, n));
      return st.isDirectory() || st.size > 0;
    });
    fs.rmSync(root, { recursive: true, force: true });
    if (left.length > 0) {
      // vitest reports an error thrown here but still exits 0: set the exit code ourselves.
      console.error(`\ntemp-guard: FAIL — tests left ${left.length} entr${left.length === 1 ? 'y' : 'ies'} in the temp folder (use tempDirs() from test/support/temp.ts): ${left.slice(0, 20).join(', ')}`);
      process.exitCode = 1;
    }
  };
}
