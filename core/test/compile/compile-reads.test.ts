/**
 * Compile reads once, decides once (issue #29, step 4): a stale compile reads the graph, the
 * spec, the prepared manifest, the sentinel and compile.json exactly once each (before the
 * flow was split into readCompileInputs + decide, the export was read and hashed twice and the
 * manifest three times), and so does the status check that finds it stale. Counted on the
 * real files of the demo's tiny Llama (export → prepare → compile, in this process) by
 * watching every open and read by path: paths/file-kind.ts opens by path and reads by
 * descriptor, everything else reads by path.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, expect, it, vi } from 'vitest';
import { compile, compileStatus } from '../../src/compile';
import { tinyExportPrepared } from '../support/compile-support';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-creads-');
let exp: string;

beforeAll(async () => {
  exp = await tinyExportPrepared(tmp());
});

afterEach(() => {
  vi.restoreAllMocks();
});

/** Counts the reads of each file (by base name) while `fn` runs. */
async function countReads(fn: () => unknown): Promise<Map<string, number>> {
  const spies = [vi.spyOn(fs, 'readFileSync'), vi.spyOn(fs, 'openSync'), vi.spyOn(fs.promises, 'open'), vi.spyOn(fs.promises, 'readFile')];
  await fn();
  const counts = new Map<string, number>();
  for (const s of spies)
    for (const c of s.mock.calls as unknown[][])
      if (typeof c[0] === 'string') counts.set(path.basename(c[0]), (counts.get(path.basename(c[0])) ?? 0) + 1);
  for (const s of spies) s.mockRestore();
  return counts;
}

function staleCopy(): Promise<string> {
  const dir = path.join(tmp(), 'exp');
  fs.cpSync(exp, dir, { recursive: true, verbatimSymlinks: true, filter: (f) => path.basename(f) !== 'compile.json' });
  return compile(dir, { backend: 'ort', verify: false }).then(() => {
    // A new mtime on the graph: the stamps fail and the graph part of the fingerprint changes.
    const t = new Date(Date.now() + 5000);
    fs.utimesSync(path.join(dir, 'model.onnx'), t, t);
    return dir;
  });
}

const INPUTS = ['model.onnx', 'weight_spec.json', '.checkpoint_prepared.json', '.checkpoint_prepared', 'compile.json'];

it('a stale compile reads the graph, the spec, the manifest, the sentinel and its record once each', async () => {
  const dir = await staleCopy();
  let changed: string[] = [];
  const counts = await countReads(async () => {
    changed = (await compile(dir, { backend: 'ort', verify: false })).changed;
  });
  expect(changed).toEqual(['graph']);
  expect(Object.fromEntries(INPUTS.map((f) => [f, counts.get(f) ?? 0]))).toEqual(Object.fromEntries(INPUTS.map((f) => [f, 1])));
  // No other input is read twice either (the shards' headers, export-report.json). Not counted:
  // directories (opened to fsync them after a write) and the prepared folder's list of what compile
  // wrote there, an output compile edits in place (read, then rewritten with the new artifact).
  const isDir = (n: string) => fs.readdirSync(dir).includes(n) || n.startsWith('tiny-prepared');
  expect([...counts].filter(([f, n]) => n > 1 && !isDir(f) && f !== '.weight-spec-compiled.json')).toEqual([]);
  expect(counts.get('model.safetensors') ?? counts.get('base-0000.safetensors')).toBe(1);
});

it('the status check that finds it stale reads each input once', async () => {
  const dir = await staleCopy();
  const counts = await countReads(() => expect(compileStatus(dir)).toMatchObject({ state: 'stale', changed: ['graph'] }));
  // The status needs no sentinel text (its existence is in the fingerprint); it reads it with the rest.
  expect(Object.fromEntries(INPUTS.map((f) => [f, counts.get(f) ?? 0]))).toEqual(Object.fromEntries(INPUTS.map((f) => [f, 1])));
  expect([...counts].filter(([, n]) => n > 1)).toEqual([]);
});
