// Bundles the three entry points. The extension and server are CommonJS (VS Code loads
// extensions with require); the CLI is CommonJS too so `npx weight-spec` runs on plain Node 20.
// Also: the viewers' webview script (dist/viewer.js, for the browser) and
// the weight spec's JSON Schema generated from the zod schema (dist/weight-spec.schema.json).
import { build } from 'esbuild';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/**
 * zod's namespace export (`z`) keeps every module reachable from it, including `z.locales`: the
 * error messages of 50 languages, 358 KB of each bundle that the project never selects (zod
 * itself configures English). Parsing them cost every CLI start about 20 ms. This resolves
 * zod's locale index to English alone.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /[\\/]locales[\\/]index\.js$/ }, (a) =>
      /[\\/]node_modules[\\/]zod[\\/]/.test(a.importer) ? { path: a.importer, namespace: 'zod-locales' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'zod-locales' }, (a) => ({
      contents: "export { default as en } from '../locales/en.js';",
      resolveDir: path.dirname(a.path),
      loader: 'js',
    }));
  },
};

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: false,
  logLevel: 'warning',
  // Native and large: located at run time, never bundled.
  external: ['vscode', 'onnxruntime-node'],
  // jsonc-parser's UMD "main" requires its parts by computed paths esbuild cannot follow;
  // its ESM "module" build bundles cleanly.
  mainFields: ['module', 'main'],
  plugins: [zodEnglishOnly],
};

const entries = [
  { entryPoints: ['core/src/cli/main.ts'], outfile: 'dist/cli.js', banner: { js: '#!/usr/bin/env node' } },
  // Also the `weight-spec-language-server` bin (other editors start it over stdio).
  { entryPoints: ['server/src/main.ts'], outfile: 'dist/server.js', banner: { js: '#!/usr/bin/env node' } },
  { entryPoints: ['client/src/extension.ts'], outfile: 'dist/extension.js' },
  { entryPoints: ['core/src/prepare/worker.ts'], outfile: 'dist/prepare-worker.js' },
];

/**
 * Writes a bundle whole or not at all (temp + rename), and only when its text changed: tests
 * rebuild dist/ (server/test/support.ts) while other test files run dist/cli.js, which must
 * never be read half-written.
 */
function writeOutput(file, text, mode = 0o644) {
  if (existsSync(file) && readFileSync(file, 'utf8') === text) return chmodSync(file, mode);
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, text, { mode });
    chmodSync(tmp, mode);
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true }); // no partial temporary left in dist/
    throw e;
  }
}

/** Builds `options` in memory and writes its output files through {@link writeOutput}. */
async function bundle(options, mode) {
  const out = await build({ ...options, write: false });
  for (const f of out.outputFiles) writeOutput(path.relative(process.cwd(), f.path), f.text, mode);
}

const BINS = new Set(['dist/cli.js', 'dist/server.js']);
for (const e of entries) {
  if (!existsSync(e.entryPoints[0])) continue;
  await bundle({ ...common, ...e }, BINS.has(e.outfile) ? 0o755 : 0o644);
}

if (existsSync('client/src/viewers/webview/main.ts')) {
  await bundle({
    entryPoints: ['client/src/viewers/webview/main.ts'],
    outfile: 'dist/viewer.js',
    bundle: true,
    platform: 'browser',
    target: 'chrome120',
    format: 'iife',
    minify: true,
    legalComments: 'none',
    logLevel: 'warning',
  });
}
if (existsSync('core/src/spec/json-schema.ts')) {
  // Run the generator from an in-memory bundle: the schema comes from the zod schema itself.
  const out = await build({ ...common, entryPoints: ['core/src/spec/json-schema.ts'], write: false, outfile: 'schema.cjs' });
  const mod = { exports: {} };
  new Function('module', 'exports', 'require', out.outputFiles[0].text)(mod, mod.exports, createRequire(import.meta.url));
  writeOutput('dist/weight-spec.schema.json', JSON.stringify(mod.exports.specJsonSchema(), null, 2) + '\n');
}
