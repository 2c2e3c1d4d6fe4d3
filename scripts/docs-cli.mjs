// `npm run docs:cli`: regenerates the marked regions of docs/CLI.md from the CLI's own command
// tables (core/src/cli/docs.ts). core/test/cli/cli-docs.test.ts fails when the committed file drifts.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// Bundled inside the repository (node_modules/.cache) so its package imports resolve.
const tmp = path.join(repo, 'node_modules', '.cache', `weight-spec-docs-${process.pid}`);
mkdirSync(tmp, { recursive: true });
try {
  const out = path.join(tmp, 'docs.mjs');
  await build({
    entryPoints: [path.join(repo, 'core/src/cli/docs.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    outfile: out,
    logLevel: 'error',
  });
  const { renderCliDoc } = await import(pathToFileURL(out).href);
  const file = path.join(repo, 'docs/CLI.md');
  const before = readFileSync(file, 'utf8');
  const after = renderCliDoc(before);
  if (after !== before) writeFileSync(file, after);
  console.log(after === before ? 'docs/CLI.md is up to date' : 'docs/CLI.md regenerated');
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
