/**
 * The one resolver of a spec's files (artifacts/spec-files.ts) and each of its callers, on a
 * real export of a copy of the llama fixture prepared after the export (so the export has no
 * link to the folder: issue 30.8): check, the graph panel's checkpoint link (graph-model.ts),
 * compile's locating (preparedDirOf), run's model folders (modelDirsOf) and `prepare --spec`
 * (spec-layout.ts) all find the prepared files through export-report.json. Then QEfficient's
 * link, made after the fact (artifacts/prepared-link.ts, issue 50.1): made only when safe.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { specFileResolver, specFilesFolder } from '../../src/artifacts/spec-files';
import { linkPreparedFolder } from '../../src/artifacts/prepared-link';
import { checkSpec } from '../../src/check/check-spec';
import { preparedDirOf } from '../../src/compile/inputs';
import { modelDirsOf } from '../../src/run/text/model-files';
import { weightSources } from '../../src/view/graph-model';
import { cliInProcess } from '../../../test/support/cli';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-spec-files-');

interface Exported {
  dir: string;
  exp: string;
  spec: string;
  prepared: string;
  /** files[].path as the spec writes them. */
  paths: string[];
}

/** Export a copy of llama, then prepare it (no link: the folder did not exist at export). */
async function exportedThenPrepared(prepare = true): Promise<Exported> {
  const dir = tmp();
  fs.cpSync(path.join(fixturesDir(), 'llama'), path.join(dir, 'llama'), { recursive: true });
  const exp = path.join(dir, 'exp');
  expect((await cliInProcess(['export', '--config', path.join(dir, 'llama'), '--out', exp])).code).toBe(0);
  const report = JSON.parse(fs.readFileSync(path.join(exp, 'export-report.json'), 'utf8')) as {
    prepared: { dir: string };
    links: string[];
  };
  expect(report.links).toEqual([]);
  if (prepare) expect((await cliInProcess(['prepare', '--checkpoint', path.join(dir, 'llama'), '--dtype', 'float32'])).code).toBe(0);
  const spec = path.join(exp, 'weight_spec.json');
  const paths = (JSON.parse(fs.readFileSync(spec, 'utf8')) as { files: { path: string }[] }).files.map((f) => f.path);
  expect(paths[0]!.split('/')[0]).toBe(path.basename(report.prepared.dir));
  return { dir, exp, spec, prepared: report.prepared.dir, paths };
}

const linkOf = (e: Exported) => path.join(e.exp, path.basename(e.prepared));

describeFixtures('one resolver for a spec files (llama export, prepared after the export)', () => {
  it('the resolver: the spec path first, then the folder the report names', async () => {
    const e = await exportedThenPrepared();
    const r = specFileResolver(e.exp);
    expect(r.reportedDir()).toBe(e.prepared);
    const loc = r.file(e.paths[0]!);
    expect(loc).toEqual({
      abs: path.join(e.prepared, e.paths[0]!.split('/').slice(1).join('/')),
      exists: true,
      viaReport: true,
      reportedDir: e.prepared,
    });
    // A path that is not under the prepared folder's name is not redirected.
    expect(r.file('elsewhere/model.safetensors')).toEqual({
      abs: path.join(e.exp, 'elsewhere/model.safetensors'),
      exists: false,
      viaReport: false,
    });
    // Once linked, the spec's own path is what it finds.
    expect(await linkPreparedFolder(e.exp, e.prepared)).toEqual({ linked: linkOf(e), made: true });
    expect(specFileResolver(e.exp).file(e.paths[0]!)).toEqual({ abs: path.join(e.exp, e.paths[0]!), exists: true, viaReport: false });
  }, 60_000);

  it('every caller finds the prepared files through the report: check, graph panel, compile, run', async () => {
    const e = await exportedThenPrepared();
    const text = fs.readFileSync(e.spec, 'utf8');
    // check: no file-missing, nothing "not prepared"
    const problems = await checkSpec(e.spec, text, { onnx: false, roots: [e.dir] });
    expect(problems.filter((p) => p.severity === 'error' || p.code === 'not-prepared')).toEqual([]);
    // the graph panel's checkpoint link: an existing file in the prepared folder
    const sources = Object.values(weightSources(e.spec, text));
    expect(sources.length).toBeGreaterThan(0);
    for (const s of sources) {
      expect(s.file!.startsWith(e.prepared + path.sep)).toBe(true);
      expect(fs.existsSync(s.file!)).toBe(true);
    }
    // compile's locating and run's model folders
    const real = fs.realpathSync(e.prepared);
    expect(preparedDirOf(e.exp, { files: e.paths.map((p) => ({ path: p, format: 'safetensors' })) })).toBe(real);
    expect(specFilesFolder(e.exp)).toBe(e.prepared);
    expect(modelDirsOf(e.exp)).toContain(e.prepared);
  }, 60_000);

  it('prepare --spec writes into the folder the report names and links it into the export', async () => {
    const e = await exportedThenPrepared(false);
    const r = await cliInProcess(['prepare', '--checkpoint', path.join(e.dir, 'llama'), '--dtype', 'float32', '--spec', e.spec]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split('\n').at(-1)).toBe(e.prepared);
    expect(r.stdout).toContain(`prepare: linked ${linkOf(e)} -> ${e.prepared}`);
    expect(fs.readlinkSync(linkOf(e))).toBe(fs.realpathSync(e.prepared));
    for (const p of e.paths) expect(fs.existsSync(path.join(e.exp, p))).toBe(true);
    // the report claims the link: a re-export owns it (keeps it, no refusal)
    expect(JSON.parse(fs.readFileSync(path.join(e.exp, 'export-report.json'), 'utf8')).links).toEqual([path.basename(e.prepared)]);
    expect((await cliInProcess(['export', '--config', path.join(e.dir, 'llama'), '--out', e.exp])).code).toBe(0);
    expect(fs.lstatSync(linkOf(e)).isSymbolicLink()).toBe(true);
  }, 60_000);

  it('the link is made only when safe: never dangling, never over what it did not make', async () => {
    const e = await exportedThenPrepared(false);
    // not prepared yet: no link (it would dangle)
    expect(await linkPreparedFolder(e.exp, e.prepared)).toEqual({ skipped: `${e.prepared}: no such prepared folder` });
    expect(fs.existsSync(linkOf(e))).toBe(false);
    // a folder without prepare's sentinel (incomplete)
    fs.mkdirSync(e.prepared);
    const skipped = await linkPreparedFolder(e.exp, e.prepared);
    expect(skipped).toMatchObject({ skipped: expect.stringContaining('not a complete prepared folder') });
    fs.rmdirSync(e.prepared);
    expect((await cliInProcess(['prepare', '--checkpoint', path.join(e.dir, 'llama'), '--dtype', 'float32'])).code).toBe(0);
    // a folder of another name is not the one the spec names
    const other = path.join(e.dir, 'other');
    fs.cpSync(e.prepared, other, { recursive: true });
    expect(await linkPreparedFolder(e.exp, other)).toMatchObject({ skipped: expect.stringContaining('not the folder') });
    expect(fs.existsSync(linkOf(e))).toBe(false);
    // something the user put at the link's name is left as it is
    fs.writeFileSync(linkOf(e), 'mine');
    expect(await linkPreparedFolder(e.exp, e.prepared)).toMatchObject({ skipped: expect.stringContaining('was not made by weight-spec') });
    expect(fs.readFileSync(linkOf(e), 'utf8')).toBe('mine');
    fs.rmSync(linkOf(e));
    // a foreign symlink too
    fs.symlinkSync(e.dir, linkOf(e));
    expect(await linkPreparedFolder(e.exp, e.prepared)).toMatchObject({ skipped: expect.stringContaining('was not made by weight-spec') });
    expect(fs.readlinkSync(linkOf(e))).toBe(e.dir);
    fs.rmSync(linkOf(e));
    // an export not ours (no report): untouched
    fs.renameSync(path.join(e.exp, 'export-report.json'), path.join(e.dir, 'report.json'));
    expect(await linkPreparedFolder(e.exp, e.prepared)).toMatchObject({
      skipped: expect.stringContaining('no complete export-report.json'),
    });
    fs.renameSync(path.join(e.dir, 'report.json'), path.join(e.exp, 'export-report.json'));
    // then made, and made once
    expect(await linkPreparedFolder(e.exp, e.prepared)).toEqual({ linked: linkOf(e), made: true });
    expect(await linkPreparedFolder(e.exp, e.prepared)).toEqual({ linked: linkOf(e), made: false });
    expect(fs.readdirSync(e.exp).filter((n) => n.includes('.tmp'))).toEqual([]);
  }, 60_000);
});

describe('specFilesFolder without an export', () => {
  it('is undefined for a folder with no spec and no report', () => {
    expect(specFilesFolder(tmp())).toBeUndefined();
  });
});
