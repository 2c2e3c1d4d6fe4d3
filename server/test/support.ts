// Small helpers shared by the server tests (data made in code, in temp dirs).
import { openSync, readSync, closeSync } from 'node:fs';

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
