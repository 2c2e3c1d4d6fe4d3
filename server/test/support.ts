// Small helpers shared by the server tests (data made in code, in temp dirs).
import { execFileSync } from 'node:child_process';
import { closeSync, cpSync, openSync, readFileSync, readSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** The JSON header of a safetensors file, read independently of core. */
export function safetensorsHeaderJson(file: string): Record<string, unknown> {
  const fd = openSync(file, 'r');
  try {
    const len = Buffer.alloc(8);
    readSync(fd, len, 0, 8, 0);
    const n = Number(len.readBigUInt64LE());
    const buf = Buffer.alloc(n);
    readSync(fd, buf, 0, n, 8);
    return JSON.parse(buf.toString('utf8')) as Record<string, unknown>;
  } finally {
    closeSync(fd);
  }
}

/**
 * Builds dist/server.js from the current sources: `node scripts/bundle.mjs` (all entries);
 * when another entry does not build right now (parallel work in progress), the server entry
 * alone with the same esbuild options, so the test still runs the server as shipped.
 */
export async function bundleServer(root: string): Promise<void> {
  const { execFileSync } = await import('node:child_process');
  try {
    execFileSync(process.execPath, ['scripts/bundle.mjs'], { cwd: root, stdio: 'pipe' });
  } catch (err) {
    console.warn(
      `[server tests] scripts/bundle.mjs failed (${
        String((err as { stderr?: Buffer }).stderr ?? err)
          .split('\n')
          .find((l) => l.includes('ERROR')) ?? 'error'
      }); bundling dist/server.js alone`,
    );
    const { build } = await import('esbuild');
    await build({
      absWorkingDir: root,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'cjs',
      logLevel: 'warning',
      external: ['vscode', 'onnxruntime-node'],
      mainFields: ['module', 'main'],
      entryPoints: ['server/src/main.ts'],
      outfile: 'dist/server.js',
    });
  }
}

/** The spec key the editor tests (emacs, neovim) misspell, and its misspelling. */
export const FIXED_KEY = 'model.layers.0.mlp.up_proj.weight';
export const TYPO_KEY = 'model.layers.0.mlp.up_prj.weight';

/** What an editor test's script recorded (its own JSON: one field per step). */
export type EditorSteps = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The steps and errors an editor test's script wrote to `file`. */
export function editorResult(file: string): { steps: EditorSteps; errors: string[] } {
  return JSON.parse(readFileSync(file, 'utf8')) as { steps: EditorSteps; errors: string[] };
}

/**
 * The editor tests' workspace: a copy of the llama fixture checkpoint in `dir` (so prepare can
 * write its prepared folder beside it), our export of it in `dir/exp` by dist/cli.js, and in its
 * spec the key `fixed` replaced by `typo`. Returns the spec and where export says prepare writes.
 */
export function typoExport(fixtures: string, root: string, dir: string, fixed: string, typo: string): { spec: string; prepared: string } {
  cpSync(path.join(fixtures, 'llama'), path.join(dir, 'llama'), { recursive: true });
  const cli = path.join(root, 'dist', 'cli.js');
  execFileSync(process.execPath, [cli, 'export', '--config', path.join(dir, 'llama'), '--out', path.join(dir, 'exp')], { stdio: 'pipe' });
  const spec = path.join(dir, 'exp', 'weight_spec.json');
  const report = JSON.parse(readFileSync(path.join(dir, 'exp', 'export-report.json'), 'utf8')) as { prepared: { dir: string } };
  const text = readFileSync(spec, 'utf8');
  if (!text.includes(`"key": "${fixed}"`)) throw new Error(`${spec} has no key "${fixed}"`);
  writeFileSync(spec, text.replace(`"key": "${fixed}"`, `"key": "${typo}"`));
  return { spec, prepared: report.prepared.dir };
}
