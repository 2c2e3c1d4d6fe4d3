/**
 * Fuzzing the path policy with paths assembled from hostile segments (`..`, absolute
 * prefixes, NUL, backslashes, links, link loops, unicode, long names): every answer is an
 * accepted path that lexically stays inside a root, or a PathPolicyError — nothing else —
 * and output-guard targets never leave the output directory, even through links.
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tempDirs } from '../../../test/support/temp';
import { PathPolicyError, createOutputGuard, isInside, resolveReadPath } from '../../src/paths';
import { runFuzz } from '../support/fuzz-harness';

const tmp = fs.realpathSync(tempDirs('ws-fuzz-paths-')());
const base = path.join(tmp, 'spec');
const out = path.join(tmp, 'out');
const extraRoot = path.join(tmp, 'data');
for (const d of [base, out, extraRoot, path.join(base, 'sub'), path.join(out, 'inner')]) fs.mkdirSync(d, { recursive: true });
fs.symlinkSync(extraRoot, path.join(base, 'link'));
fs.symlinkSync(tmp, path.join(out, 'escape'));
fs.symlinkSync('inner', path.join(out, 'alias'));
fs.symlinkSync(path.join(base, 'loop2'), path.join(base, 'loop1'));
fs.symlinkSync(path.join(base, 'loop1'), path.join(base, 'loop2'));
fs.writeFileSync(path.join(out, 'existing.bin'), 'x');

const SEGMENTS = [
  '..',
  '.',
  'sub',
  'link',
  'loop1',
  'escape',
  'alias',
  'inner',
  'existing.bin',
  'a.safetensors',
  '',
  '\u0000',
  '..\\..',
  'ｆ',
  '\u202e',
  '🙂',
  'x'.repeat(256),
  '...',
  ' ',
  '~',
];
const pathText = fc
  .tuple(
    fc.constantFrom('', '/', `${tmp}/`, `${base}/`, `${extraRoot}/`, `${out}/`, 'C:\\', '//'),
    fc.array(fc.oneof(fc.constantFrom(...SEGMENTS), fc.string({ unit: 'binary', maxLength: 4 })), { maxLength: 8 }),
  )
  .map(([prefix, segs]) => prefix + segs.join('/'));

describe('path policy fuzz', () => {
  it('read paths: accepted paths stay lexically inside a root, everything else is a PathPolicyError (seeded)', () => {
    const seen = { ok: 0, refused: 0 };
    runFuzz('paths-read', 1000, fc.tuple(pathText, fc.boolean()), ([p, withRoot]) => {
      const roots = withRoot ? [extraRoot] : [];
      try {
        const r = resolveReadPath(base, p, roots);
        expect(isInside(base, r.abs) || (withRoot && isInside(extraRoot, r.abs))).toBe(true);
        seen.ok++;
      } catch (e) {
        if (!(e instanceof PathPolicyError)) throw e;
        expect(e.message.includes('\n')).toBe(false);
        seen.refused++;
      }
    });
    expect(seen.ok).toBeGreaterThan(100);
    expect(seen.refused).toBeGreaterThan(100);
  });

  it('write targets: never outside the real output directory (seeded)', () => {
    const realOut = fs.realpathSync(out);
    const seen = { ok: 0, refused: 0 };
    runFuzz('paths-write', 600, pathText, (p) => {
      const g = createOutputGuard(out, { create: false });
      try {
        const abs = g.target(p);
        expect(isInside(out, abs)).toBe(true);
        // Where the write would really land, following every link that exists.
        let dir = path.dirname(abs);
        while (!fs.existsSync(dir)) dir = path.dirname(dir);
        expect(isInside(realOut, fs.realpathSync(dir))).toBe(true);
        seen.ok++;
      } catch (e) {
        if (!(e instanceof PathPolicyError)) throw e;
        seen.refused++;
      }
    });
    expect(seen.ok).toBeGreaterThan(50);
    expect(seen.refused).toBeGreaterThan(50);
  });
});
