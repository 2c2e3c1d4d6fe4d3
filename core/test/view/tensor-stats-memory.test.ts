// A tensor's statistics stream in bounded chunks (issue 50 item 5): a 256 MB bf16 tensor (a
// sparse file: zeros, written in no time) is summarized in a fresh process whose peak RSS stays
// within 128 MB of the same process on a 4 KB tensor (44 MB measured here: 4 MB chunks and
// their f32 decodes awaiting GC), far below the tensor's 256 MB or its 512 MB as f32. Memory is measured in child
// processes (test/support/peak-rss.ts); the child is this module bundled by esbuild.
import fs from 'node:fs';
import path from 'node:path';
import { buildSync } from 'esbuild';
import { expect, it } from 'vitest';
import { REPO_ROOT } from '../../../test/support/fixtures';
import { peakRss } from '../../../test/support/peak-rss';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('stats-mem-');
const MB = 1024 * 1024;

/** A safetensors file holding one BF16 tensor of `shape`, its data a hole (zeros). */
function sparseBf16(file: string, shape: [number, number]): void {
  const bytes = shape[0] * shape[1] * 2;
  let json = JSON.stringify({ w: { dtype: 'BF16', shape, data_offsets: [0, bytes] } });
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const head = Buffer.alloc(8);
  head.writeBigUInt64LE(BigInt(json.length));
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(json)]));
  fs.truncateSync(file, 8 + json.length + bytes);
}

it('summarizes a 256 MB bf16 tensor with a peak RSS within 128 MB of a 4 KB one (chunks, not the 256 MB, nor its 512 MB in f32)', () => {
  const dir = tmp();
  const entry = path.join(dir, 'entry.ts');
  fs.writeFileSync(
    entry,
    `import { tensorStats } from ${JSON.stringify(path.join(REPO_ROOT, 'core/src/view/tensor-stats.ts'))};\n` +
      `tensorStats(process.argv[2], 'w').then((s) => console.log(JSON.stringify({ ...s, head: s.head.length })));\n`,
  );
  const script = path.join(dir, 'stats.cjs');
  buildSync({ entryPoints: [entry], bundle: true, platform: 'node', format: 'cjs', outfile: script, logLevel: 'error' });
  const big = path.join(dir, 'big.safetensors');
  const tiny = path.join(dir, 'tiny.safetensors');
  sparseBf16(big, [8192, 16384]);
  sparseBf16(tiny, [32, 64]);
  const t = peakRss(dir, [script, tiny]);
  const b = peakRss(dir, [script, big]);
  expect(b.status, b.stderr).toBe(0);
  expect(t.status, t.stderr).toBe(0);
  const s = JSON.parse(b.stdout) as { count: number; min: number; max: number; std: number; histogram: { counts: number[] } };
  expect([s.count, s.min, s.max, s.std]).toEqual([8192 * 16384, 0, 0, 0]);
  expect(s.histogram.counts[0]).toBe(8192 * 16384);
  expect((b.kb - t.kb) / 1024, `peak ${b.kb} KiB vs ${t.kb} KiB`).toBeLessThan(128);
  expect(fs.statSync(big).size).toBeGreaterThan(256 * MB);
});
