/**
 * Issue #43, cases 1, 3, 4 and the id half of 8, over real files and the built CLI
 * (dist/cli.js, spawned bounded: 10 s and 1 GB resident, killed past either, so a hang fails
 * the test instead of stalling the suite):
 * - 3: the cache's `refs/<name>` is read through the read policy: a FIFO, a link to /dev/zero,
 *   a socket, a link to a folder or a 10 GB sparse file is one line naming the ref — and a
 *   FIFO among the refs a snapshot path is matched against is skipped, never opened.
 * - 1: a prepared folder's manifest is a workspace file: its `hub` and `source` leading to
 *   `evil/refs/main -> /dev/zero` make `compile` and `check` answer, not grow.
 * - 4: a folder laid out as `models--evil--x/snapshots/<40 hex>` in the workspace is no cache
 *   snapshot: export records no `hub`, and prepare never writes into weight-spec's home.
 * - 8: `org/name@../../x` is refused as an id, naming it, and `./org/x` is never used.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cliBounded, type BoundedRun } from '../../../test/support/bounded';
import { describeFixtures, fixturesDir, REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-hostile-hub-');
const C1 = 'c'.repeat(40);

const sockets: net.Server[] = [];
afterAll(() => sockets.forEach((s) => s.close()));

beforeAll(() => {
  execFileSync(process.execPath, ['scripts/bundle.mjs'], { cwd: REPO_ROOT, stdio: 'pipe' });
}, 120_000);

/** Neither bound was hit, and stderr holds exactly `lines` lines, none a stack frame. */
function answered(r: BoundedRun, lines = 1): void {
  expect(r.hung, `hung: ${r.stderr}`).toBe(false);
  expect(r.rssExceeded, `RSS passed 1 GB (peak ${r.peakRssMb} MB)`).toBe(false);
  expect(r.stderr).not.toMatch(/\n\s+at |Maximum call stack|Invalid array length/);
  if (lines > 0) expect(r.stderr.trim().split('\n'), r.stderr).toHaveLength(lines);
}

/** The llama fixture's model files (no ONNX, no reference) copied into `dir`. */
function modelFolder(dir: string): string {
  fs.mkdirSync(dir, { recursive: true });
  for (const f of fs.readdirSync(path.join(fixturesDir(), 'llama'))) {
    if (f.endsWith('.onnx') || f === 'reference.json') continue;
    fs.copyFileSync(path.join(fixturesDir(), 'llama', f), path.join(dir, f));
  }
  return dir;
}

/** An HF cache under `root` with `org/m` at commit C1 (files copied, refs as given by `refs`). */
function cacheWith(root: string, refs: (refsDir: string) => void): { cache: string; snap: string; env: Record<string, string> } {
  const cache = path.join(root, 'hf', 'hub');
  const repo = path.join(cache, 'models--org--m');
  const snap = modelFolder(path.join(repo, 'snapshots', C1));
  fs.mkdirSync(path.join(repo, 'refs'), { recursive: true });
  refs(path.join(repo, 'refs'));
  return { cache, snap, env: { HF_HUB_CACHE: cache, WEIGHT_SPEC_HOME: path.join(root, 'home') } };
}

describeFixtures('hostile Hugging Face cache refs (case 3)', () => {
  const cases: [string, (ref: string) => Promise<void> | void, (ref: string) => string][] = [
    ['a FIFO', (ref) => void execFileSync('mkfifo', [ref]), (ref) => `weight-spec: ${ref}: is a FIFO, expected a file`],
    [
      'a link to /dev/zero',
      (ref) => fs.symlinkSync('/dev/zero', ref),
      (ref) => `weight-spec: ${ref}: is a character device, expected a file`,
    ],
    [
      'a link to a folder',
      (ref) => fs.symlinkSync(path.dirname(ref), ref),
      (ref) => `weight-spec: ${ref}: is a directory, expected a file`,
    ],
    [
      'a 10 GB sparse file',
      (ref) => fs.truncateSync((fs.writeFileSync(ref, ''), ref), 10 * 2 ** 30),
      (ref) => `weight-spec: ${ref}: is ${10 * 2 ** 30} bytes, over the 4096-byte limit for this file`,
    ],
    [
      'a socket',
      async (ref) => {
        const s = net.createServer();
        sockets.push(s);
        await new Promise<void>((r) => s.listen(ref, r));
      },
      (ref) => `weight-spec: ${ref}: is a socket, expected a file`,
    ],
  ];
  for (const [what, make, message] of cases) {
    it(`refs/main as ${what}: export --config org/m answers in one line naming the ref`, async () => {
      const root = tmp();
      const { cache, env } = cacheWith(root, () => undefined);
      const ref = path.join(cache, 'models--org--m', 'refs', 'main');
      await make(ref);
      const r = await cliBounded(['export', '--config', 'org/m', '--out', path.join(root, 'out')], { cwd: root, env });
      answered(r);
      expect(r.code).toBe(1);
      expect(r.stderr.trim()).toBe(message(ref));
      expect(fs.existsSync(path.join(root, 'out'))).toBe(false);
    });
  }

  it('a dangling refs/main is "not in the cache" (no hang, one line naming the id)', async () => {
    const root = tmp();
    const { env } = cacheWith(root, (refs) => fs.symlinkSync(path.join(refs, 'gone'), path.join(refs, 'main')));
    const r = await cliBounded(['export', '--config', 'org/m', '--out', path.join(root, 'out')], { cwd: root, env });
    answered(r);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^weight-spec: org\/m: .*not in the Hugging Face cache .*refs\/main\); weight-spec never downloads/);
  });

  it('a FIFO among the refs a snapshot path is matched against is skipped: export by path records the ref that does point at it', async () => {
    const root = tmp();
    const { snap, env } = cacheWith(root, (refs) => {
      execFileSync('mkfifo', [path.join(refs, 'a-fifo')]);
      fs.symlinkSync('/dev/zero', path.join(refs, 'b-zero'));
      fs.writeFileSync(path.join(refs, 'v1'), C1);
    });
    const out = path.join(root, 'out');
    const r = await cliBounded(['export', '--config', snap, '--out', out], { cwd: root, env });
    answered(r, 0);
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(fs.readFileSync(path.join(out, 'export-report.json'), 'utf8')) as { source: { hub?: unknown } };
    expect(report.source.hub).toEqual({ id: 'org/m', revision: 'v1', commit: C1 });
  });
});

describeFixtures('a folder shaped like a cache snapshot in the workspace (case 4)', () => {
  it('is no snapshot: export records no hub, and export and prepare write beside its models-- folder, not into weight-spec home', async () => {
    const root = tmp();
    const cache = path.join(root, 'hf', 'hub');
    fs.mkdirSync(cache, { recursive: true });
    const home = path.join(root, 'home');
    const env = { HF_HUB_CACHE: cache, WEIGHT_SPEC_HOME: home };
    const ws = path.join(root, 'ws');
    const fake = modelFolder(path.join(ws, 'models--evil--x', 'snapshots', C1));
    fs.mkdirSync(path.join(ws, 'models--evil--x', 'refs'));
    fs.writeFileSync(path.join(ws, 'models--evil--x', 'refs', 'main'), C1);
    const out = path.join(ws, 'exp');
    const e = await cliBounded(['export', '--config', fake, '--out', out], { cwd: ws, env });
    answered(e, 0);
    expect(e.code, e.stderr).toBe(0);
    const report = JSON.parse(fs.readFileSync(path.join(out, 'export-report.json'), 'utf8')) as {
      source: { hub?: unknown };
      prepared: { dir: string };
    };
    expect(report.source.hub).toBeUndefined();
    expect(path.dirname(report.prepared.dir)).toBe(ws);
    expect(path.basename(report.prepared.dir)).toMatch(/^evil--x-cccccccc-prepared-float32-[0-9a-f]{10}$/);
    // the printed next step names the folder, not `evil/x@<commit>` (which would resolve in the real cache)
    expect(e.stdout).not.toContain('evil/x@');
    // prepare without --out: where export said, in the workspace; nothing in weight-spec's home
    const p = await cliBounded(['prepare', '--checkpoint', fake, '--dtype', 'float32'], { cwd: ws, env, ms: 60_000 });
    answered(p, 0);
    expect(p.code, p.stderr).toBe(0);
    expect(fs.existsSync(path.join(report.prepared.dir, '.checkpoint_prepared'))).toBe(true);
    expect(fs.existsSync(home)).toBe(false);
    const manifest = JSON.parse(fs.readFileSync(path.join(report.prepared.dir, '.checkpoint_prepared.json'), 'utf8')) as { hub?: unknown };
    expect(manifest.hub).toBeUndefined();
    // an --out inside the cache-shaped layout is refused, as one inside the cache is
    const inside = await cliBounded(['prepare', '--checkpoint', fake, '--dtype', 'float32', '--out', path.join(fake, '..', 'p')], {
      cwd: ws,
      env,
    });
    answered(inside, 0);
    expect(inside.code).toBe(2);
    expect(inside.stderr.split('\n')[0]).toMatch(
      /^weight-spec: prepare: --out .* is inside the Hugging Face cache or a folder laid out like one/,
    );
  }, 120_000);

  it('the same layout inside the cache folder (reached through a symlink) is a snapshot', async () => {
    const root = tmp();
    const { snap, env } = cacheWith(root, (refs) => fs.writeFileSync(path.join(refs, 'main'), C1));
    const link = path.join(root, 'my-model');
    fs.symlinkSync(snap, link);
    const out = path.join(root, 'out');
    const r = await cliBounded(['export', '--config', link, '--out', out], { cwd: root, env });
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(fs.readFileSync(path.join(out, 'export-report.json'), 'utf8')) as { source: { hub?: unknown } };
    expect(report.source.hub).toEqual({ id: 'org/m', revision: 'main', commit: C1 });
  });
});

describeFixtures("a prepared folder's manifest leading to evil/refs/main -> /dev/zero (case 1)", () => {
  it('compile and check answer (the hub of a manifest whose source is no cache snapshot is not believed)', async () => {
    const root = tmp();
    const ws = path.join(root, 'ws');
    const model = modelFolder(path.join(ws, 'llama'));
    const exp = path.join(ws, 'exp');
    const env = { HF_HUB_CACHE: path.join(root, 'hf', 'hub'), WEIGHT_SPEC_HOME: path.join(root, 'home') };
    expect((await cliBounded(['export', '--config', model, '--out', exp], { env, ms: 60_000 })).code).toBe(0);
    const report = JSON.parse(fs.readFileSync(path.join(exp, 'export-report.json'), 'utf8')) as { prepared: { dir: string } };
    const prepared = report.prepared.dir;
    const p = await cliBounded(['prepare', '--checkpoint', model, '--dtype', 'float32', '--out', prepared], { env, ms: 60_000 });
    expect(p.code, p.stderr).toBe(0);
    // The repository ships evil/refs/main -> /dev/zero (git stores symlinks) and a manifest naming it.
    fs.mkdirSync(path.join(ws, 'evil', 'refs'), { recursive: true });
    fs.mkdirSync(path.join(ws, 'evil', 'snapshots', C1), { recursive: true });
    fs.symlinkSync('/dev/zero', path.join(ws, 'evil', 'refs', 'main'));
    const mf = path.join(prepared, '.checkpoint_prepared.json');
    const manifest = JSON.parse(fs.readFileSync(mf, 'utf8')) as Record<string, unknown>;
    manifest.source = path.join(ws, 'evil', 'snapshots', C1);
    manifest.hub = { id: 'evil/x', revision: 'main', commit: 'd'.repeat(40) };
    fs.writeFileSync(mf, JSON.stringify(manifest));
    // and a report that agrees with it (so the provenance check has nothing to say)
    const rf = path.join(exp, 'export-report.json');
    const rep = JSON.parse(fs.readFileSync(rf, 'utf8')) as { source: Record<string, unknown> };
    rep.source.checkpoint = manifest.source;
    fs.writeFileSync(rf, JSON.stringify(rep));
    const c = await cliBounded(['compile', exp], { env, ms: 30_000 });
    answered(c, 1);
    expect(c.code, c.stderr).toBe(0);
    // the manifest's source is gone: stale, said as a warning; no "moved" claim from the planted ref
    expect(c.stderr).toMatch(/^compile: warning: .* is stale \(source .*evil\/snapshots\/c{40}\/.* no longer exists\)/);
    const k = await cliBounded(['check', exp], { env });
    answered(k, 0);
    expect(k.code).toBe(0);
    expect(k.stdout).not.toContain('moved from');
  }, 120_000);
});

describeFixtures('org/name@../../x (case 8)', () => {
  it('is refused as an id, naming it, and ./org/x is never used', async () => {
    const root = tmp();
    modelFolder(path.join(root, 'org', 'x'));
    const env = { HF_HUB_CACHE: path.join(root, 'hf', 'hub') };
    for (const given of ['org/name@../../x', 'org/name@main/../../x', 'org/name@/abs', 'org/name@a//b']) {
      const r = await cliBounded(['export', '--config', given, '--out', path.join(root, 'out')], { cwd: root, env });
      answered(r);
      expect(r.code).toBe(1);
      const rev = given.slice(given.indexOf('@') + 1);
      expect(r.stderr.trim()).toBe(
        `weight-spec: ${given}: "${rev}" is not a revision of a model id (a branch, tag or commit name, without "." or ".." parts)`,
      );
      expect(fs.existsSync(path.join(root, 'out'))).toBe(false);
    }
  });
});
