/**
 * Issue #43, case 8's CLI half and the rule tried on other layouts, over real files and the built
 * CLI (spawned bounded: 10 s, 1 GB resident):
 * - compile never replaces a symlinked compile.json with a regular file: it refuses in one line
 *   before building anything, and the link and its target are as they were;
 * - a compile.json nested two million levels: compile and run answer without a stack overflow;
 * - every JSON the tool reads is kind-checked and size-capped before the first byte: FIFOs,
 *   links to /dev/zero and 300 MB sparse files as export-report.json, the prepared manifest, its
 *   sentinel, config.json, the spec and prepare's lock answer in one line (or are ignored where a
 *   missing file is fine), never a hang;
 * - a truncated or damaged PNG is one line naming the image, never pngjs' stream internals;
 * - the read policy's size cap itself, at its edge and on a 1 TB sparse file.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { cliBounded, type BoundedRun } from '../../../test/support/bounded';
import { describeFixtures, fixturesDir, REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { FormatError } from '../../src/errors';
import { MAX_INPUT_BYTES, MAX_JSON_BYTES, readJsonTextSync, readRegularFile, readRegularFileSync } from '../../src/paths';
import { decodeImage } from '../../src/run/vlm/image';

const tmp = tempDirs('ws-hostile-files-');
const req = createRequire(__filename);

beforeAll(() => {
  execFileSync(process.execPath, ['scripts/bundle.mjs'], { cwd: REPO_ROOT, stdio: 'pipe' });
}, 120_000);

function answered(r: BoundedRun): void {
  expect(r.hung, `hung: ${r.stderr}`).toBe(false);
  expect(r.rssExceeded, `RSS passed 1 GB (peak ${r.peakRssMb} MB)`).toBe(false);
  expect(r.stderr).not.toMatch(/\n\s+at |Maximum call stack|Invalid array length|ERR_/);
}

/** A prepared and compiled export of a llama copy under a fresh root. */
async function compiledExport(): Promise<{ root: string; exp: string; prepared: string; model: string }> {
  const root = tmp();
  const model = path.join(root, 'llama');
  fs.cpSync(path.join(fixturesDir(), 'llama'), model, { recursive: true });
  const exp = path.join(root, 'exp');
  const bounded = { ms: 60_000 };
  expect((await cliBounded(['export', '--config', model, '--out', exp], bounded)).code).toBe(0);
  const prepared = (JSON.parse(fs.readFileSync(path.join(exp, 'export-report.json'), 'utf8')) as { prepared: { dir: string } }).prepared
    .dir;
  expect((await cliBounded(['prepare', '--checkpoint', model, '--dtype', 'float32'], bounded)).code).toBe(0);
  expect((await cliBounded(['compile', exp], bounded)).code).toBe(0);
  return { root, exp, prepared, model };
}

describeFixtures('compile.json as a symlink, and nested two million levels (case 8)', () => {
  it('compile refuses to replace a symlinked compile.json, in one line, before building; link and target unchanged', async () => {
    const { root, exp } = await compiledExport();
    const target = path.join(root, 'elsewhere.json');
    fs.renameSync(path.join(exp, 'compile.json'), target);
    fs.symlinkSync(target, path.join(exp, 'compile.json'));
    const before = fs.readFileSync(target);
    const r = await cliBounded(['compile', exp, '--force'], { ms: 60_000 });
    answered(r);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `weight-spec: ${path.join(exp, 'compile.json')}: is a symlink; compile never replaces a link with its record (remove the link)\n`,
    );
    expect(fs.lstatSync(path.join(exp, 'compile.json')).isSymbolicLink()).toBe(true);
    expect(fs.readFileSync(target).equals(before)).toBe(true);
  }, 120_000);

  it('compile and run answer over a compile.json nested two million levels, naming it when they refuse', async () => {
    const { exp } = await compiledExport();
    fs.writeFileSync(path.join(exp, 'compile.json'), '['.repeat(2_000_000) + ']'.repeat(2_000_000));
    const run = await cliBounded(['run', exp, '--input-ids', '1,2', '--max-new-tokens', '1'], { ms: 60_000 });
    answered(run);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `weight-spec: ${path.join(exp, 'compile.json')}: not a record of a weight-spec compile here (run weight-spec compile ${exp} again)\n`,
    );
    const c = await cliBounded(['compile', exp], { ms: 60_000 });
    answered(c);
    expect(c.code, c.stderr).toBe(0);
  }, 180_000);
});

describeFixtures('special and huge files where the tool reads JSON (the rule, other layouts)', () => {
  type Make = (file: string) => void;
  const fifo: Make = (f) => void execFileSync('mkfifo', [f]);
  const zero: Make = (f) => fs.symlinkSync('/dev/zero', f);
  const sparse: Make = (f) => fs.truncateSync((fs.writeFileSync(f, ''), f), 300 * 2 ** 20);
  const kinds: [string, Make, RegExp][] = [
    ['a FIFO', fifo, /is a FIFO, expected a file/],
    ['a link to /dev/zero', zero, /is a character device, expected a file/],
    ['a 300 MB sparse file', sparse, new RegExp(`is ${300 * 2 ** 20} bytes, over the \\d+-byte limit for this file`)],
  ];
  const replace = (file: string, make: Make) => {
    fs.rmSync(file, { force: true });
    make(file);
  };

  it('weight_spec.json, export-report.json, the prepared manifest and sentinel, config.json: check, compile, export answer', async () => {
    const { root, exp, prepared, model } = await compiledExport();
    for (const [what, make, said] of kinds) {
      const saved = (f: string) => fs.copyFileSync(f, `${f}.bak`);
      const restore = (f: string) => (fs.rmSync(f, { force: true }), fs.renameSync(`${f}.bak`, f));

      const spec = path.join(exp, 'weight_spec.json');
      saved(spec);
      replace(spec, make);
      const k = await cliBounded(['check', spec]);
      answered(k);
      expect(k.code, what).toBe(1);
      expect(k.stderr.trim().split('\n').at(-1), what).toMatch(said);
      const c = await cliBounded(['compile', exp, '--force']);
      answered(c);
      expect(c.code, what).toBe(1);
      expect(c.stderr.trim(), what).toMatch(said);
      expect(c.stderr.trim().split('\n'), what).toHaveLength(1);
      restore(spec);

      // the report is optional to compile and check: a special one reads as absent
      const report = path.join(exp, 'export-report.json');
      saved(report);
      replace(report, make);
      const kr = await cliBounded(['check', exp]);
      answered(kr);
      expect(kr.code, `${what}: ${kr.stderr}`).toBe(0);
      restore(report);

      for (const name of ['.checkpoint_prepared.json', '.checkpoint_prepared']) {
        const f = path.join(prepared, name);
        saved(f);
        replace(f, make);
        const cm = await cliBounded(['compile', exp, '--force']);
        answered(cm);
        expect(cm.code, `${what} ${name}`).toBe(1);
        expect(cm.stderr.trim().split('\n'), `${what} ${name}: ${cm.stderr}`).toHaveLength(1);
        restore(f);
      }

      const config = path.join(model, 'config.json');
      saved(config);
      replace(config, make);
      const e = await cliBounded(['export', '--config', model, '--out', path.join(root, `e-${what.length}`)]);
      answered(e);
      expect(e.code, what).toBe(1);
      expect(e.stderr.trim(), what).toMatch(said);
      restore(config);
    }
  }, 300_000);

  it("prepare's lock <out>.lock as a FIFO or a link to /dev/zero: one line, no hang", async () => {
    const root = tmp();
    for (const [what, make, said] of kinds.slice(0, 2)) {
      const out = path.join(root, `o-${what.length}`);
      make(`${out}.lock`);
      const r = await cliBounded(['prepare', '--checkpoint', path.join(fixturesDir(), 'llama'), '--dtype', 'float32', '--out', out]);
      answered(r);
      expect(r.code, what).toBe(1);
      expect(r.stderr.trim(), what).toMatch(said);
      expect(fs.existsSync(out)).toBe(false);
    }
  }, 120_000);
});

it('a truncated or damaged PNG is one line naming the image, in words, never pngjs internals (case 8)', () => {
  const dir = tmp();
  const { PNG } = req('pngjs') as { PNG: { new (o: object): { data: Buffer }; sync: { write(p: unknown): Buffer } } };
  const p = new PNG({ width: 64, height: 64 });
  for (let i = 0; i < p.data.length; i++) p.data[i] = (i * 7919) % 251;
  const png = PNG.sync.write(p);
  const file = path.join(dir, 'photo.png');
  const messages = new Set<string>();
  const tryDecode = (bytes: Buffer) => {
    fs.writeFileSync(file, bytes);
    try {
      decodeImage(file);
      return;
    } catch (e) {
      expect(e).toBeInstanceOf(FormatError);
      const m = (e as Error).message;
      expect(m.startsWith(`${file}: `), m).toBe(true);
      expect(m.split('\n')).toHaveLength(1);
      messages.add(m.slice(file.length + 2));
    }
  };
  for (let cut = 40; cut < png.length; cut += 61) tryDecode(png.subarray(0, cut));
  for (let at = 41; at < png.length - 12; at += 29) {
    const c = Buffer.from(png);
    c[at]! ^= 0xff;
    tryDecode(c);
  }
  const all = [...messages].join('\n');
  expect(all).toContain('the PNG data ends early (the file is truncated)');
  expect(all).not.toMatch(/waitng|read requests|should not go down|finished stream/);
});

it('the read policy: a size cap judged before the first byte, at its exact edge, sync and async', async () => {
  const dir = tmp();
  const at = path.join(dir, 'at.json');
  fs.writeFileSync(at, 'x'.repeat(100));
  expect(readRegularFileSync(at, 'utf8', 100)).toBe('x'.repeat(100));
  expect(await readRegularFile(at, 'utf8', 100)).toBe('x'.repeat(100));
  expect(() => readRegularFileSync(at, 'utf8', 99)).toThrow(`${at}: is 100 bytes, over the 99-byte limit for this file`);
  await expect(readRegularFile(at, 'utf8', 99)).rejects.toThrow(`${at}: is 100 bytes, over the 99-byte limit for this file`);
  // 1 TB claimed by a sparse file: refused from fstat, with no allocation
  const huge = path.join(dir, 'huge.json');
  fs.writeFileSync(huge, '');
  fs.truncateSync(huge, 2 ** 40);
  const t0 = performance.now();
  expect(() => readJsonTextSync(huge)).toThrow(`${huge}: is ${2 ** 40} bytes, over the ${MAX_JSON_BYTES}-byte limit for this file`);
  expect(() => readRegularFileSync(huge)).toThrow(`${huge}: is ${2 ** 40} bytes, over the ${MAX_INPUT_BYTES}-byte limit for this file`);
  expect(performance.now() - t0).toBeLessThan(10_000);
  const empty = path.join(dir, 'empty');
  fs.writeFileSync(empty, '');
  expect(readRegularFileSync(empty).length).toBe(0);
});
