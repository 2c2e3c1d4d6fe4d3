// `npm run test:e2e` (after scripts/e2e-setup.sh): bundles the extension and the mocha suites,
// builds a fixture workspace in a temp dir from ../shared/fixtures, runs the suites inside a real
// VS Code (code-server + Chromium) through @vscode/test-electron's runTests, then checks the
// packaged .vsix installed into a fresh code-server (Problems panel screenshot), and prints the
// closing `N passed, N failed` line. Options: --skip-ui, --only-ui; env WEIGHT_SPEC_E2E_GREP
// (mocha grep), WEIGHT_SPEC_E2E_UI_GREP (only the matching checks of the code-server session), WEIGHT_SPEC_E2E_KEEP (keep work files), WEIGHT_SPEC_E2E_SCREENSHOT (copy the
// Problems-panel PNG there), WEIGHT_SPEC_E2E_VSCODE (see below).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { runTests } from '@vscode/test-electron';
import { REPO_ROOT, assertInstalled } from '../test/e2e/harness.mjs';
import { makeWorkspace } from '../test/e2e/workspace.mjs';
import { runUiCheck } from '../test/e2e/ui-check.mjs';

const argv = new Set(process.argv.slice(2));
const t0 = Date.now();
process.chdir(REPO_ROOT);
assertInstalled();

const buildDir = path.join(REPO_ROOT, '.e2e', 'build');
fs.rmSync(buildDir, { recursive: true, force: true });
try {
  execFileSync(process.execPath, ['scripts/bundle.mjs'], { stdio: 'inherit' });
} catch {
  // Keep going with the extension alone: the suites that need dist/cli.js or dist/server.js
  // then fail with their own message instead of the whole run stopping here.
  console.error('e2e: scripts/bundle.mjs failed; bundling the extension only');
}
await build({
  entryPoints: ['client/src/extension.ts'],
  outfile: 'dist/extension.js',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  external: ['vscode', 'onnxruntime-node'],
  mainFields: ['module', 'main'],
  logLevel: 'warning',
});
// Type-check the suites (esbuild only strips types).
execFileSync(process.execPath, [path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'test/e2e'], { stdio: 'inherit' });
const suiteDir = path.join(REPO_ROOT, 'test', 'e2e', 'suite');
await build({
  entryPoints: fs
    .readdirSync(suiteDir)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.join(suiteDir, f)),
  outdir: path.join(buildDir, 'suite'),
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  external: ['vscode', 'mocha'],
  mainFields: ['module', 'main'],
  logLevel: 'warning',
});

let passed = 0;
let failed = 0;
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'weight-spec-e2e-'));

const adapter = path.join(REPO_ROOT, 'test', 'e2e', 'code-server-adapter.mjs');
fs.chmodSync(adapter, 0o755); // runTests spawns it directly, as it would spawn VS Code

if (!argv.has('--only-ui')) {
  const ws = makeWorkspace(path.join(scratch, 'workspace'));
  const report = path.join(scratch, 'report.txt');
  const results = path.join(scratch, 'results.json');
  fs.writeFileSync(report, '');
  // Stream the suite's lines as they arrive (the extension host writes them to `report`).
  let shown = 0;
  const pump = () => {
    const buf = fs.readFileSync(report);
    if (buf.length > shown) {
      process.stdout.write(buf.subarray(shown));
      shown = buf.length;
    }
  };
  const iv = setInterval(pump, 500);
  try {
    await runTests({
      // The adapter runs code-server + Chromium. WEIGHT_SPEC_E2E_VSCODE=download lets
      // test-electron fetch a desktop VS Code instead (where one can be downloaded); any other
      // value is taken as the path of a VS Code executable.
      ...(process.env.WEIGHT_SPEC_E2E_VSCODE === 'download' ? {} : { vscodeExecutablePath: process.env.WEIGHT_SPEC_E2E_VSCODE || adapter }),
      // WEIGHT_SPEC_E2E_EXT_ROOT: run another copy of the extension (development of the harness).
      extensionDevelopmentPath: process.env.WEIGHT_SPEC_E2E_EXT_ROOT ?? REPO_ROOT,
      extensionTestsPath: path.join(buildDir, 'suite', 'index.js'),
      launchArgs: [ws.dir, `--user-data-dir=${path.join(scratch, 'user-data')}`, `--extensions-dir=${path.join(scratch, 'extensions')}`],
      extensionTestsEnv: {
        WEIGHT_SPEC_E2E_REPORT: report,
        WEIGHT_SPEC_E2E_RESULTS: results,
        WEIGHT_SPEC_E2E_REPO: REPO_ROOT,
        WEIGHT_SPEC_E2E_WORKSPACE: JSON.stringify(ws),
      },
    });
  } catch (e) {
    console.error(`e2e: VS Code run failed: ${e instanceof Error ? e.message : String(e)}`);
  }
  clearInterval(iv);
  pump();
  if (fs.existsSync(results)) {
    const r = JSON.parse(fs.readFileSync(results, 'utf8'));
    passed += r.passed;
    failed += r.failed;
  } else {
    console.error('e2e: the suite wrote no results (it did not run to the end)');
    failed += 1;
  }
}

if (!argv.has('--skip-ui')) {
  const ui = await runUiCheck(path.join(scratch, 'ui'));
  passed += ui.passed;
  failed += ui.failed;
}

if (failed === 0 && !process.env.WEIGHT_SPEC_E2E_KEEP) fs.rmSync(scratch, { recursive: true, force: true });
else console.log(`e2e: work files kept in ${scratch}`);
console.log(`e2e took ${((Date.now() - t0) / 1000).toFixed(0)} s`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
