/**
 * Issue #14, point 2: every reader checks the file kind before it opens it. A FIFO, a
 * device, a socket or a /proc file is refused with one line ("is a FIFO, expected a file")
 * instead of blocking forever (a FIFO's open waits for a writer) or spinning; an output
 * folder on /proc is refused before anything is written. The CLI is spawned with a deadline,
 * so a hang fails the test instead of stalling the suite.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixturesDir, REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { twoFileCheckpoint } from '../support/check-helpers';

const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');
const tmp = tempDirs('ws-special-');

/** Runs the CLI; kills it after `ms` (a hang) and reports `hung: true`. */
function cli(args: string[], cwd: string, ms = 15_000): Promise<{ code: number | null; stdout: string; stderr: string; hung: boolean }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [CLI, ...args], { cwd, env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off', WEIGHT_SPEC_DEBUG: '' } });
    let stdout = '';
    let stderr = '';
    let hung = false;
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      hung = true;
      p.kill('SIGKILL');
    }, ms);
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, hung });
    });
  });
}

const sockets: net.Server[] = [];
afterAll(() => sockets.forEach((s) => s.close()));

beforeAll(() => {
  execFileSync(process.execPath, ['scripts/bundle.mjs'], { cwd: REPO_ROOT, stdio: 'inherit' });
});

describe('readers refuse FIFOs, devices, sockets and /proc files (#14.2)', () => {
  it('export --config: a FIFO config.json', async () => {
    const dir = tmp();
    const model = path.join(dir, 'model');
    fs.mkdirSync(model);
    execFileSync('mkfifo', [path.join(model, 'config.json')]);
    const r = await cli(['export', '--config', model, '--out', path.join(dir, 'out')], dir);
    expect(r.hung, 'export hung on the FIFO').toBe(false);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`weight-spec: ${path.join(model, 'config.json')}: is a FIFO, expected a file\n`);
    expect(fs.existsSync(path.join(dir, 'out', 'model.onnx'))).toBe(false);
  });

  it('inspect: a FIFO x.onnx, a socket, a character device and a /proc file', async () => {
    const dir = tmp();
    execFileSync('mkfifo', [path.join(dir, 'x.onnx')]);
    const fifo = await cli(['inspect', 'x.onnx'], dir);
    expect(fifo.hung, 'inspect hung on the FIFO').toBe(false);
    expect(fifo.code).toBe(1);
    expect(fifo.stderr).toBe('weight-spec: x.onnx: is a FIFO, expected a file\n');

    const sockPath = path.join(dir, 's.safetensors');
    const server = net.createServer();
    sockets.push(server);
    await new Promise<void>((r) => server.listen(sockPath, r));
    const sock = await cli(['inspect', 's.safetensors'], dir);
    expect(sock.stderr).toBe('weight-spec: s.safetensors: is a socket, expected a file\n');

    const dev = await cli(['inspect', '/dev/zero'], dir);
    expect(dev.hung).toBe(false);
    expect(dev.stderr).toBe('weight-spec: /dev/zero: is a character device, expected a file\n');

    const proc = await cli(['inspect', '/proc/self/environ'], dir);
    expect(proc.code).toBe(1);
    expect(proc.stderr).toBe('weight-spec: /proc/self/environ: is a /proc file, expected a file on disk\n');
  });

  it('check: a FIFO model.onnx beside the spec is reported, not waited on', async () => {
    const dir = tmp();
    const { spec } = twoFileCheckpoint(dir);
    const specFile = path.join(dir, 'model.weight_spec.json');
    fs.writeFileSync(specFile, JSON.stringify(spec, null, 2));
    execFileSync('mkfifo', [path.join(dir, 'model.onnx')]);
    const r = await cli(['check', specFile], dir);
    expect(r.hung, 'check hung on the FIFO').toBe(false);
    expect(r.stdout + r.stderr).toContain('the companion ONNX cannot be read (is a FIFO, expected a file): model.onnx');
    // The spec itself as a FIFO.
    const fifoSpec = path.join(dir, 'fifo.weight_spec.json');
    execFileSync('mkfifo', [fifoSpec]);
    const s = await cli(['check', fifoSpec], dir);
    expect(s.hung).toBe(false);
    expect(s.stderr).toBe(`weight-spec: ${fifoSpec}: is a FIFO, expected a file\n`);
  });

  it('--out on /proc is refused at once, before anything is written', async () => {
    const dir = tmp();
    const r = await cli(['export', '--config', path.join(fixturesDir(), 'llama'), '--out', '/proc/self/ws-out'], dir, 20_000);
    expect(r.hung, 'export spun on /proc').toBe(false);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('weight-spec: /proc/self/ws-out: is on /proc, not a folder on disk; choose another output directory\n');
  });
});
