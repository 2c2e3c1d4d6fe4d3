/**
 * Fault injection for the write pipelines: a size-limited output file system (a real tmpfs
 * when running as root with mount rights, else RLIMIT_FSIZE via prlimit on the child), child
 * processes killed with SIGKILL at seeded random moments, and a seeded RNG.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';

/** A directory whose file system holds at most `bytes` (tmpfs), or undefined when mounting is not allowed. */
export function mountSmallFs(dir: string, bytes: number): { dir: string; unmount: () => void } | undefined {
  fs.mkdirSync(dir, { recursive: true });
  if (process.getuid?.() !== 0) return undefined;
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes}`, 'tmpfs', dir], { stdio: 'ignore' });
  if (r.status !== 0) return undefined;
  return { dir, unmount: () => void spawnSync('umount', ['-l', dir], { stdio: 'ignore' }) };
}

/** True when `prlimit` can cap a child's file size (the fallback for a tiny disk). */
export function havePrlimit(): boolean {
  return spawnSync('prlimit', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** Bundles a small TypeScript entry (which may import core/src) into a runnable CommonJS file. */
export async function bundleScript(source: string, outDir: string, name: string): Promise<string> {
  const entry = path.join(outDir, `${name}.ts`);
  const out = path.join(outDir, `${name}.cjs`);
  fs.writeFileSync(entry, source);
  await build({
    entryPoints: [entry],
    outfile: out,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    logLevel: 'error',
    external: ['onnxruntime-node'],
    mainFields: ['module', 'main'],
  }); // as scripts/bundle.mjs (jsonc-parser's UMD main)
  return out;
}

/** Result of a child run. */
export interface ChildRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  stdout: string;
  ms: number;
}

/**
 * Runs `node script args…`; with `killAfterMs` the child gets SIGKILL after that delay
 * (if still running); with `fsizeBytes` it runs under `prlimit --fsize`.
 */
export function runChild(
  script: string,
  args: string[],
  opts: { killAfterMs?: number; fsizeBytes?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<ChildRun> {
  const argv = [process.execPath, script, ...args];
  const [cmd, ...rest] = opts.fsizeBytes !== undefined ? ['prlimit', `--fsize=${opts.fsizeBytes}`, ...argv] : argv;
  return new Promise((resolve) => {
    const t0 = Date.now();
    const child = spawn(cmd!, rest, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...opts.env } });
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.stdout.on('data', (d) => (stdout += d));
    const timer = opts.killAfterMs !== undefined ? setTimeout(() => child.kill('SIGKILL'), opts.killAfterMs) : undefined;
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      resolve({ code, signal, stderr, stdout, ms: Date.now() - t0 });
    });
  });
}

/** Seeded xorshift RNG: `next(n)` in [0, n). */
export function rng(seed: number): (n: number) => number {
  let x = seed >>> 0 || 1;
  return (n) => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x % n;
  };
}

/** Every entry below `dir` (relative paths), for "nothing left behind" checks. */
export function listTree(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  const out: string[] = [];
  const walk = (d: string, rel: string) => {
    for (const n of fs.readdirSync(d)) {
      const r = rel ? `${rel}/${n}` : n;
      out.push(r);
      if (fs.lstatSync(path.join(d, n)).isDirectory()) walk(path.join(d, n), r);
    }
  };
  walk(dir, '');
  return out.sort();
}
