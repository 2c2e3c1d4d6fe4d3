/**
 * vitest globalSetup: the whole run gets its own temp folder (TMPDIR, which `os.tmpdir()`,
 * the spawned CLI and its workers all follow), and the run fails when a test leaves anything
 * in it. Tests make temp dirs with `tempDirs()` (test/support/temp.ts), which removes them.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Files that ONNX Runtime writes into TMPDIR on its own whenever a session is created: the
 * libonnxruntime build in onnxruntime-node embeds Microsoft's 1DS telemetry SDK ("MAT"),
 * which keeps its session marker `.ses` (first-launch time, SDK uid) and a debug log
 * `mat-debug-<pid>.log` there (both names are strings in libonnxruntime.so.1; any session
 * created with TMPDIR set shows them). No test asks for them and no option turns them off,
 * and the log may or may not be empty, so they are not a test's leak whatever their size.
 * Nothing else is excused: an empty file or another dotfile left behind is a leak too.
 */
const ORT_OWN = /^(\.ses|mat-debug-\d+\.log)$/;

/** The entries of `root` that a test left behind (ONNX Runtime's own files excepted). */
export function leftovers(root: string): string[] {
  return fs
    .readdirSync(root)
    .filter((n) => !(ORT_OWN.test(n) && fs.lstatSync(path.join(root, n)).isFile()))
    .sort();
}

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
    const left = leftovers(root);
    fs.rmSync(root, { recursive: true, force: true });
    if (left.length > 0) {
      // vitest reports an error thrown here but still exits 0: set the exit code ourselves.
      console.error(
        `\ntemp-guard: FAIL — tests left ${left.length} entr${left.length === 1 ? 'y' : 'ies'} in the temp folder (use tempDirs() from test/support/temp.ts): ${left.slice(0, 20).join(', ')}`,
      );
      process.exitCode = 1;
    }
  };
}
