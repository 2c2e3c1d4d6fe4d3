/**
 * Model ids as users type them (issue 37): `org/name`, `org/name@revision` and `--revision`
 * resolved in a Hugging Face cache laid out in code exactly as huggingface_hub writes it
 * (`models--org--name/{blobs,refs,snapshots}`, snapshot files as relative symlinks to blobs;
 * huggingface_hub `file_download.py` / `constants.py`). The end-to-end path by id is judged by
 * the fixtures' reference logits; the cache itself must come out byte for byte unchanged.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { cliInProcess, cliStdout } from '../../../test/support/cli';
import { describeFixtures, fixturesDir, type FixtureRef } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { maxAbsDiff } from '../support/graph-support';
import { listCachedModels } from '../../src/editor/cached-models';
import { hubLabelOf } from '../../src/hub/hf-cache';

const tmp = tempDirs('ws-hub-');

const C1 = 'a'.repeat(40);
const C2 = 'b'.repeat(40);

/** Lays out `models--<org>--<name>` with one snapshot per commit of `fixture`'s files and the given refs. */
function makeRepo(cache: string, id: string, fixture: string, commits: string[], refs: Record<string, string>): string {
  const repo = path.join(cache, `models--${id.replace('/', '--')}`);
  fs.mkdirSync(path.join(repo, 'blobs'), { recursive: true });
  const src = path.join(fixturesDir(), fixture);
  for (const commit of commits) {
    const snap = path.join(repo, 'snapshots', commit);
    fs.mkdirSync(snap, { recursive: true });
    for (const f of fs.readdirSync(src)) {
      if (f.endsWith('.onnx') || f === 'reference.json') continue;
      const bytes = fs.readFileSync(path.join(src, f));
      const sha = crypto.createHash('sha256').update(bytes).digest('hex');
      const blob = path.join(repo, 'blobs', sha);
      if (!fs.existsSync(blob)) fs.writeFileSync(blob, bytes);
      fs.symlinkSync(path.join('..', '..', 'blobs', sha), path.join(snap, f));
    }
  }
  fs.mkdirSync(path.join(repo, 'refs'), { recursive: true });
  for (const [name, commit] of Object.entries(refs)) fs.writeFileSync(path.join(repo, 'refs', name), commit);
  return repo;
}

/** sha256 of every file and link under `dir` (links by their target text): the cache's fingerprint. */
function treeHash(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isSymbolicLink()) out[path.relative(dir, p)] = `-> ${fs.readlinkSync(p)}`;
      else if (e.isDirectory()) walk(p);
      else out[path.relative(dir, p)] = crypto.createHash('sha256').update(fs.readFileSync(p)).digest('hex');
    }
  };
  walk(dir);
  return out;
}

let root = '';
let cache = '';
let home = '';
beforeEach(() => {
  root = tmp();
  cache = path.join(root, 'hf', 'hub');
  home = path.join(root, 'ws-home');
  fs.mkdirSync(cache, { recursive: true });
  vi.stubEnv('HF_HUB_CACHE', cache);
  vi.stubEnv('WEIGHT_SPEC_HOME', home);
});
afterEach(() => {
  vi.unstubAllEnvs();
});

async function ws(...args: string[]) {
  return cliInProcess(args, { cwd: root });
}
const ok = (...args: string[]): Promise<string> => cliStdout(root, ...args);

describeFixtures('Hub ids resolved in the local Hugging Face cache', () => {
  for (const [fam, id, spell] of [
    ['llama', 'meta-test/tiny-llama', 'meta-test/tiny-llama'],
    ['mixtral', 'mistral-test/tiny-mixtral', `mistral-test/tiny-mixtral@v1`],
  ] as const) {
    it(`${fam}: export → prepare → compile → run by id (${spell}) reproduces reference.json; the cache is untouched`, async () => {
      makeRepo(cache, id, fam, [C1], { main: C1, v1: C1 });
      const before = treeHash(cache);
      const out = path.join(root, `${fam}-export`);
      const exp = await ok('export', '--config', spell, '--out', out, '--ctx-len', '32');
      const report = JSON.parse(fs.readFileSync(path.join(out, 'export-report.json'), 'utf8'));
      const snap = path.join(cache, `models--${id.replace('/', '--')}`, 'snapshots', C1);
      expect(report.source.checkpoint).toBe(snap);
      // the revision the user asked for (main by default, v1 for the tag), the snapshot's commit
      const revision = spell.includes('@') ? spell.split('@')[1] : 'main';
      expect(report.source.hub).toEqual({ id, revision, commit: C1 });
      // the planned prepared folder is in weight-spec's home, never in the cache
      expect(report.prepared.dir.startsWith(home + path.sep)).toBe(true);
      // the printed next step names the same snapshot by id and commit, and runs as printed
      const hint = exp.split('\n').find((l) => l.trim().startsWith('weight-spec prepare'))!;
      expect(hint.trim()).toBe(`weight-spec prepare --checkpoint ${id}@${C1} --dtype float32`);
      const prep = await ok(...hint.trim().split(/\s+/).slice(1));
      expect(prep).toContain(report.prepared.dir);
      const manifest = JSON.parse(fs.readFileSync(path.join(report.prepared.dir, '.checkpoint_prepared.json'), 'utf8'));
      // the hint pins the commit, so the manifest's revision is that commit (staleness then never moves)
      expect(manifest.hub).toEqual({ id, revision: C1, commit: C1 });
      await ok('compile', out);
      const ref = JSON.parse(fs.readFileSync(path.join(fixturesDir(), fam, 'reference.json'), 'utf8')) as FixtureRef;
      const dump = path.join(root, 'logits.json');
      await ok('run', out, '--input-ids', [...ref.input_ids, ...ref.generated_ids.slice(0, -1)].join(','), '--dump-logits', dump);
      const rows = (JSON.parse(fs.readFileSync(dump, 'utf8')) as { logits: number[][] }).logits;
      expect(maxAbsDiff(rows, ref.logits)).toBeLessThanOrEqual(1e-4);
      expect((await ok('run', out, '--input-ids', ref.input_ids.join(','), '--max-new-tokens', '5')).trim()).toBe(
        ref.generated_ids.join(','),
      );
      // inspect by id lists the snapshot's tensors
      expect(await ok('inspect', id, '--json')).toContain('model.embed_tokens.weight');
      expect(treeHash(cache)).toEqual(before);
    });
  }

  it('revision forms: @branch, @tag, @commit, --revision; conflicting or misplaced revisions are usage errors', async () => {
    makeRepo(cache, 'org/m', 'llama', [C1, C2], { main: C2, 'release-1': C1 });
    const src = (spell: string, ...more: string[]) =>
      ok('export', '--config', spell, '--out', path.join(root, `e-${Math.random()}`), ...more);
    const commitOf = async (p: Promise<string>) => {
      await p;
      const dirs = fs.readdirSync(root).filter((d) => d.startsWith('e-'));
      const last = dirs.map((d) => path.join(root, d)).sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0]!;
      const r = JSON.parse(fs.readFileSync(path.join(last, 'export-report.json'), 'utf8'));
      fs.rmSync(last, { recursive: true });
      return r.source.hub.commit as string;
    };
    expect(await commitOf(src('org/m'))).toBe(C2);
    expect(await commitOf(src('org/m@release-1'))).toBe(C1);
    expect(await commitOf(src(`org/m@${C1}`))).toBe(C1);
    expect(await commitOf(src('org/m', '--revision', 'release-1'))).toBe(C1);
    const clash = await ws('export', '--config', 'org/m@main', '--revision', 'release-1', '--out', path.join(root, 'x'));
    expect([clash.code, clash.stderr]).toEqual([2, expect.stringMatching(/names revision main and --revision says release-1/)]);
    fs.mkdirSync(path.join(root, 'plain'));
    const misplaced = await ws('inspect', 'plain', '--revision', 'main');
    expect(misplaced.code).toBe(2);
  });

  it('not in the cache: one line naming where it looked and the command that fetches it; nothing downloaded', async () => {
    const r = await ws('prepare', '--checkpoint', 'org/absent', '--dtype', 'float32');
    expect(r.code).toBe(1);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(path.join(root, 'org', 'absent'));
    expect(lines[0]).toContain(path.join(cache, 'models--org--absent'));
    expect(lines[0]).toContain('huggingface-cli download org/absent');
    const rev = await ws('export', '--config', 'org/absent@dev', '--out', path.join(root, 'o'));
    expect(rev.stderr).toContain('huggingface-cli download org/absent --revision dev');
  });

  it('an incomplete snapshot (an indexed shard whose blob is missing) is refused with the shard name before any work', async () => {
    const repo = makeRepo(cache, 'org/part', 'llama', [C1], { main: C1 });
    const link = path.join(repo, 'snapshots', C1, 'model-00002-of-00002.safetensors');
    fs.rmSync(path.resolve(path.dirname(link), fs.readlinkSync(link)));
    for (const args of [
      ['prepare', '--checkpoint', 'org/part', '--dtype', 'float32'],
      ['export', '--config', 'org/part', '--out', path.join(root, 'o')],
    ]) {
      const r = await ws(...args);
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stderr).toMatch(/incomplete: model-00002-of-00002\.safetensors.*is missing/);
    }
    expect(fs.existsSync(path.join(root, 'o'))).toBe(false);
    expect(fs.existsSync(home)).toBe(false);
  });

  it('a local folder of that name wins over the cache', async () => {
    makeRepo(cache, 'org/llama', 'llama', [C1], { main: C1 });
    fs.cpSync(path.join(fixturesDir(), 'llama'), path.join(root, 'org', 'llama'), { recursive: true });
    const out = path.join(root, 'local-export');
    await ok('export', '--config', 'org/llama', '--out', out);
    const report = JSON.parse(fs.readFileSync(path.join(out, 'export-report.json'), 'utf8'));
    expect(report.source.checkpoint).toBe(path.join(root, 'org', 'llama'));
    expect(report.source.hub).toBeUndefined();
  });

  it('a later download that moves refs/main shows in check as a changed source; --out inside the cache is refused', async () => {
    const repo = makeRepo(cache, 'org/m', 'llama', [C1], { main: C1 });
    const out = path.join(root, 'export');
    await ok('export', '--config', 'org/m', '--out', out, '--ctx-len', '32');
    await ok('prepare', '--checkpoint', 'org/m', '--dtype', 'float32');
    await ok('compile', out);
    const inCache = await ws('prepare', '--checkpoint', 'org/m', '--dtype', 'float32', '--out', path.join(repo, 'snapshots', 'mine'));
    expect([inCache.code, inCache.stderr]).toEqual([2, expect.stringContaining('inside the Hugging Face cache')]);
    // huggingface-cli download of a newer revision: a new snapshot, refs/main rewritten
    makeRepo(cache, 'org/m', 'llama', [C2], { main: C2 });
    // the export's prepared folder still holds C1 (compile stays consistent with it); check says the source moved
    const checked = await ws('check', out);
    expect(checked.stdout).toMatch(
      new RegExp(`prepared-stale\\].*org/m: main moved from ${C1.slice(0, 12)} to ${C2.slice(0, 12)} since prepare`),
    );
    // and a prepare by the same id now makes a new folder from the new snapshot
    const re = await ok('prepare', '--checkpoint', 'org/m', '--dtype', 'float32');
    expect(re).toContain(`org--m-${C2.slice(0, 8)}-prepared-float32`);
  });

  it("the editor's pick lists cached models with size, model_type and support; files are labelled by id, not by blob path", () => {
    const repo = makeRepo(cache, 'org/llama', 'llama', [C1], { main: C1 });
    makeRepo(cache, 'org/mystery', 'llama', [C2], {});
    fs.writeFileSync(path.join(cache, 'models--org--mystery', 'blobs', 'cfg'), JSON.stringify({ model_type: 'not_a_family' }));
    fs.rmSync(path.join(cache, 'models--org--mystery', 'snapshots', C2, 'config.json'));
    fs.symlinkSync(path.join('..', '..', 'blobs', 'cfg'), path.join(cache, 'models--org--mystery', 'snapshots', C2, 'config.json'));
    // an embedding encoder (export/embedding/) is supported too
    makeRepo(cache, 'org/enc', 'llama', [C1], { main: C1 });
    fs.writeFileSync(path.join(cache, 'models--org--enc', 'blobs', 'enc'), JSON.stringify({ model_type: 'xlm-roberta' }));
    fs.rmSync(path.join(cache, 'models--org--enc', 'snapshots', C1, 'config.json'));
    fs.symlinkSync(path.join('..', '..', 'blobs', 'enc'), path.join(cache, 'models--org--enc', 'snapshots', C1, 'config.json'));
    const blobBytes = (id: string) =>
      fs
        .readdirSync(path.join(cache, `models--${id.replace('/', '--')}`, 'blobs'))
        .reduce((a, b) => a + fs.statSync(path.join(cache, `models--${id.replace('/', '--')}`, 'blobs', b)).size, 0);
    const got = listCachedModels(process.env);
    expect(got.map((m) => [m.id, m.revision, m.commit, m.modelType, m.supported, m.bytes])).toEqual([
      ['org/enc', 'main', C1, 'xlm-roberta', true, blobBytes('org/enc')],
      ['org/llama', 'main', C1, 'llama', true, blobBytes('org/llama')],
      ['org/mystery', C2, C2, 'not_a_family', false, blobBytes('org/mystery')],
    ]);
    const shard = path.join(repo, 'snapshots', C1, 'model-00001-of-00002.safetensors');
    expect(hubLabelOf(shard)).toBe(`org/llama@main (commit ${C1.slice(0, 12)})`);
    expect(hubLabelOf(fs.realpathSync(shard))).toBe('org/llama (a blob of the Hugging Face cache)');
    expect(hubLabelOf(path.join(fixturesDir(), 'llama', 'config.json'))).toBeUndefined();
  });
});
