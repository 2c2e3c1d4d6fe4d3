/**
 * Write-side path policy and atomic replacement: writes stay below the output directory,
 * never go through a link out of it, never replace a file the run did not create.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { tempDirs } from '../../../test/support/temp';
import {
  PathPolicyError,
  atomicReplaceDir,
  atomicWriteFile,
  atomicWriteFileSync,
  createOutputGuard,
  makeTempSiblingDir,
  removeStaleTemps,
  type PathPolicyCode,
} from '../../src/paths';

const makeTmp = tempDirs('ws-write-');
let tmp: string;
let out: string;
let outside: string;

beforeEach(() => {
  tmp = fs.realpathSync(makeTmp());
  out = path.join(tmp, 'out');
  outside = path.join(tmp, 'outside');
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(outside, 'victim.txt'), 'original');
});

function code(fn: () => unknown): PathPolicyCode | 'none' {
  try {
    fn();
    return 'none';
  } catch (e) {
    if (e instanceof PathPolicyError) {
      expect(e.message.includes('\n')).toBe(false);
      return e.code;
    }
    throw e;
  }
}

async function codeAsync(fn: () => Promise<unknown>): Promise<PathPolicyCode | 'none'> {
  try {
    await fn();
    return 'none';
  } catch (e) {
    if (e instanceof PathPolicyError) return e.code;
    throw e;
  }
}

const listing = (d: string) => fs.readdirSync(d).sort();

describe('createOutputGuard', () => {
  it('creates the output directory and writes nested files atomically', async () => {
    const g = createOutputGuard(out);
    const p = await g.writeFile('a/b/c.json', '{"x":1}');
    expect(p).toBe(path.join(out, 'a', 'b', 'c.json'));
    expect(fs.readFileSync(p, 'utf8')).toBe('{"x":1}');
    expect(listing(path.join(out, 'a', 'b'))).toEqual(['c.json']);
    expect(g.created()).toEqual([p]);
    // The run may rewrite what it created.
    await g.writeFile('a/b/c.json', '{"x":2}');
    expect(fs.readFileSync(p, 'utf8')).toBe('{"x":2}');
  });

  it('refuses targets leaving the output directory', () => {
    const g = createOutputGuard(out);
    expect(code(() => g.target('../outside/victim.txt'))).toBe('write-outside-output');
    expect(code(() => g.target('a/../../x'))).toBe('write-outside-output');
    expect(code(() => g.target(path.join(outside, 'victim.txt')))).toBe('write-outside-output');
    expect(code(() => g.target('.'))).toBe('write-outside-output');
    expect(code(() => g.target(`${out}-sibling/x`))).toBe('write-outside-output');
    expect(code(() => g.target('x\0y'))).toBe('path-invalid');
    expect(code(() => g.target('y'.repeat(300)))).toBe('path-invalid');
    expect(g.created()).toEqual([]);
  });

  it('refuses a directory symlink that redirects a write out, and writes nothing there', async () => {
    fs.mkdirSync(out);
    fs.symlinkSync(outside, path.join(out, 'shards'));
    const g = createOutputGuard(out);
    expect(code(() => g.target('shards/victim.txt'))).toBe('write-through-symlink');
    expect(code(() => g.target('shards/new/deeper.bin'))).toBe('write-through-symlink');
    expect(await codeAsync(() => g.writeFile('shards/new.bin', 'evil'))).toBe('write-through-symlink');
    expect(listing(outside)).toEqual(['victim.txt']);
    expect(fs.readFileSync(path.join(outside, 'victim.txt'), 'utf8')).toBe('original');
  });

  it('refuses replacing a symlinked file the run did not create; the link target is untouched', async () => {
    fs.mkdirSync(out);
    fs.symlinkSync(path.join(outside, 'victim.txt'), path.join(out, 'model.safetensors'));
    const g = createOutputGuard(out);
    expect(await codeAsync(() => g.writeFile('model.safetensors', 'evil'))).toBe('write-through-symlink');
    expect(fs.readFileSync(path.join(outside, 'victim.txt'), 'utf8')).toBe('original');
  });

  it('allows a link inside the output directory that stays inside it', async () => {
    fs.mkdirSync(path.join(out, 'real'), { recursive: true });
    fs.symlinkSync('real', path.join(out, 'alias'));
    const g = createOutputGuard(out);
    await g.writeFile('alias/f.bin', 'ok');
    expect(fs.readFileSync(path.join(out, 'real', 'f.bin'), 'utf8')).toBe('ok');
  });

  it('refuses a symlink loop in the output directory', () => {
    fs.mkdirSync(out);
    fs.symlinkSync(path.join(out, 'l2'), path.join(out, 'l1'));
    fs.symlinkSync(path.join(out, 'l1'), path.join(out, 'l2'));
    const g = createOutputGuard(out);
    expect(code(() => g.target('l1/x'))).toBe('symlink-loop');
  });

  it('accepts an output directory that is itself a symlink (the user chose it)', async () => {
    const real = path.join(tmp, 'real-out');
    fs.mkdirSync(real);
    fs.symlinkSync(real, out);
    const g = createOutputGuard(out);
    expect(g.realOutDir).toBe(real);
    await g.writeFile('x.json', '1');
    expect(fs.readFileSync(path.join(real, 'x.json'), 'utf8')).toBe('1');
  });

  it('refuses overwriting a file the run did not create unless marked owned', async () => {
    fs.mkdirSync(path.join(out, 'prev'), { recursive: true });
    fs.writeFileSync(path.join(out, 'user-notes.txt'), 'mine');
    fs.writeFileSync(path.join(out, 'prev', 'base-0000.safetensors'), 'old');
    const g = createOutputGuard(out);
    expect(code(() => g.target('user-notes.txt'))).toBe('overwrite-refused');
    expect(code(() => g.target('prev/base-0000.safetensors'))).toBe('overwrite-refused');
    expect(code(() => g.target('prev'))).toBe('overwrite-refused');
    g.markOwned('prev');
    expect(g.owns('prev/base-0000.safetensors')).toBe(true);
    await g.writeFile('prev/base-0000.safetensors', 'new');
    expect(fs.readFileSync(path.join(out, 'prev', 'base-0000.safetensors'), 'utf8')).toBe('new');
    expect(fs.readFileSync(path.join(out, 'user-notes.txt'), 'utf8')).toBe('mine');
    const g2 = createOutputGuard(out, { owned: ['user-notes.txt'] });
    expect(code(() => g2.target('user-notes.txt'))).toBe('none');
  });
});

describe('atomic writes', () => {
  it('atomicWriteFile replaces content and leaves no temp file', async () => {
    fs.mkdirSync(out);
    const f = path.join(out, 'f.json');
    await atomicWriteFile(f, 'one');
    await atomicWriteFile(f, new Uint8Array([0x74, 0x77, 0x6f]));
    atomicWriteFileSync(path.join(out, 'g.json'), 'three');
    expect(fs.readFileSync(f, 'utf8')).toBe('two');
    expect(listing(out)).toEqual(['f.json', 'g.json']);
  });

  it('atomicWriteFile replaces a symlink instead of writing through it', async () => {
    fs.mkdirSync(out);
    const f = path.join(out, 'f');
    fs.symlinkSync(path.join(outside, 'victim.txt'), f);
    await atomicWriteFile(f, 'new');
    expect(fs.lstatSync(f).isSymbolicLink()).toBe(false);
    expect(fs.readFileSync(path.join(outside, 'victim.txt'), 'utf8')).toBe('original');
  });

  it('a failed atomic write leaves the old file and no temp', async () => {
    fs.mkdirSync(out);
    const f = path.join(out, 'f');
    fs.writeFileSync(f, 'old');
    const bad = {
      toString() {
        throw new Error('boom');
      },
    } as unknown as string;
    await expect(atomicWriteFile(f, bad)).rejects.toThrow();
    expect(fs.readFileSync(f, 'utf8')).toBe('old');
    expect(listing(out)).toEqual(['f']);
  });

  it('a failed atomic write is one line naming the file, keeping the errno code', async () => {
    const f = path.join(tmp, 'no-such-dir', 'f.json');
    const err = (await atomicWriteFile(f, 'x').catch((e: unknown) => e)) as Error & { code?: string };
    expect(err.message).toBe(`${f}: cannot write: directory does not exist (ENOENT)`);
    expect(err.code).toBe('ENOENT');
    expect(() => atomicWriteFileSync(f, 'x')).toThrow(`${f}: cannot write`);
  });

  it('atomicReplaceDir installs a new tree and replaces an old one completely', async () => {
    const a = await makeTempSiblingDir(out);
    fs.writeFileSync(path.join(a, 'one'), '1');
    await atomicReplaceDir(a, out);
    expect(listing(out)).toEqual(['one']);
    const b = await makeTempSiblingDir(out);
    fs.writeFileSync(path.join(b, 'two'), '2');
    await atomicReplaceDir(b, out);
    expect(listing(out)).toEqual(['two']);
    expect(listing(tmp)).toEqual(['out', 'outside']);
  });

  it('atomicReplaceDir refuses a symlinked final directory and a different parent', async () => {
    fs.symlinkSync(outside, out);
    const a = await makeTempSiblingDir(out);
    await expect(atomicReplaceDir(a, out)).rejects.toBeInstanceOf(PathPolicyError);
    expect(listing(outside)).toEqual(['victim.txt']);
    await expect(atomicReplaceDir(a, path.join(outside, 'x'))).rejects.toThrow(/share a parent/);
  });

  it('removeStaleTemps removes leftovers of dead runs only', async () => {
    fs.mkdirSync(out);
    const dead = path.join(out, 'base-0000.safetensors.tmp-99999999-0123abcd');
    const deadDir = path.join(out, 'prep.old-99999999-0123abcd');
    const mine = path.join(out, `x.tmp-${process.pid}-0123abcd`);
    fs.writeFileSync(dead, '');
    fs.mkdirSync(deadDir);
    fs.writeFileSync(mine, '');
    fs.writeFileSync(path.join(out, 'keep.safetensors'), '');
    expect((await removeStaleTemps(out)).sort()).toEqual([dead, deadDir].sort());
    expect(listing(out)).toEqual(['keep.safetensors', path.basename(mine)]);
    expect(await removeStaleTemps(out, true)).toEqual([mine]);
  });
});
