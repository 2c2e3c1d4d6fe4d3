// Bundles the three entry points. The extension and server are CommonJS (VS Code loads
// extensions with require); the CLI is CommonJS too so `npx weight-spec` runs on plain Node 20.
import { build } from 'esbuild';
import { chmodSync, existsSync } from 'node:fs';

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
};

const entries = [
  { entryPoints: ['core/src/cli/main.ts'], outfile: 'dist/cli.js', banner: { js: '#!/usr/bin/env node' } },
  // Also the `weight-spec-language-server` bin (other editors start it over stdio).
  { entryPoints: ['server/src/main.ts'], outfile: 'dist/server.js', banner: { js: '#!/usr/bin/env node' } },
  { entryPoints: ['client/src/extension.ts'], outfile: 'dist/extension.js' },
  { entryPoints: ['core/src/prepare/worker.ts'], outfile: 'dist/prepare-worker.js' },
];

for (const e of entries) {
  if (!existsSync(e.entryPoints[0])) continue;
  await build({ ...common, ...e });
}
for (const bin of ['dist/cli.js', 'dist/server.js']) if (existsSync(bin)) chmodSync(bin, 0o755);
