#!/usr/bin/env node
// A stand-in for the VS Code executable that @vscode/test-electron's runTests() launches
// (`vscodeExecutablePath`): it takes the same arguments (--extensionDevelopmentPath=…,
// --extensionTestsPath=…, --user-data-dir=…, --extensions-dir=…, the folder to open), runs
// them in code-server + headless Chromium, and exits with the test suite's exit code, which
// the workbench reports through window.codeAutomationExit (smoke-test driver).
// Desktop-only flags (--no-sandbox, --disable-updates, …) are accepted and ignored.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { assertInstalled, killGroup, launchBrowser, makeProfile, startCodeServer, workbenchUrl } from './harness.mjs';

const devPaths = [];
let testsPath;
let userDataDir;
let extensionsDir;
const folders = [];
for (const a of process.argv.slice(2)) {
  const m = /^--([^=]+)=(.*)$/s.exec(a);
  if (m) {
    if (m[1] === 'extensionDevelopmentPath') devPaths.push(path.resolve(m[2]));
    else if (m[1] === 'extensionTestsPath') testsPath = path.resolve(m[2]);
    else if (m[1] === 'user-data-dir') userDataDir = path.resolve(m[2]);
    else if (m[1] === 'extensions-dir') extensionsDir = path.resolve(m[2]);
  } else if (!a.startsWith('-')) {
    folders.push(path.resolve(a));
  }
}
if (!testsPath || folders.length !== 1) {
  console.error('code-server-adapter: needs --extensionTestsPath=… and exactly one folder to open');
  process.exit(2);
}

const timeoutMs = Number(process.env.WEIGHT_SPEC_E2E_TIMEOUT_MS ?? 15 * 60_000);
let server;
let browser;
// eslint-disable-next-line no-useless-assignment -- the exit code until a suite reports one (read by the exit handlers)
let code = 1;
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'weight-spec-cs-'));
const stop = async () => {
  await browser?.close().catch(() => {});
  await killGroup(server?.child.pid);
};
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    void stop().then(() => process.exit(130));
  });
}
try {
  assertInstalled();
  const profile = makeProfile(scratch, { userDataDir, extensionsDir });
  server = await startCodeServer(profile, { logFile: path.join(scratch, 'code-server.log') });
  const launched = await launchBrowser();
  browser = launched.browser;
  const page = launched.page;
  let reportExit;
  const exitCode = new Promise((resolve) => (reportExit = resolve));
  await page.exposeFunction('codeAutomationExit', (c) => reportExit(Number(c)));
  const consoleLog = fs.createWriteStream(path.join(scratch, 'browser-console.log'));
  page.on('console', (m) => consoleLog.write(`[${m.type()}] ${m.text()}\n`));
  page.on('pageerror', (e) => consoleLog.write(`[pageerror] ${e.message}\n`));
  await page.goto(workbenchUrl(server, folders[0], { devPaths, testsPath }));
  let timer;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(() => {
      console.error(`code-server-adapter: no exit code within ${timeoutMs / 1000} s (logs in ${scratch})`);
      resolve(1);
    }, timeoutMs);
  });
  code = await Promise.race([exitCode, timeout]);
  clearTimeout(timer);
  consoleLog.end();
} catch (e) {
  console.error(`code-server-adapter: ${e instanceof Error ? e.message : String(e)} (logs in ${scratch})`);
  code = 1;
}
await stop();
if (code === 0 && !process.env.WEIGHT_SPEC_E2E_KEEP) fs.rmSync(scratch, { recursive: true, force: true });
process.exit(code);
