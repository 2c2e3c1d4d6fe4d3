// A tensor's statistics stream in bounded chunks (issue 50 item 5): a 256 MB bf16 tensor (a
// sparse file: zeros, written in no time) is summarized in a fresh process whose peak RSS stays
// within 128 MB of the same process on a 4 KB tensor (44 MB measured here: 4 MB chunks and
// their f32 decodes awaiting GC), far below the tensor's 256 MB or its 512 MB as f32. Memory is measured in child
// processes (test/support/peak-rss.ts); the child is this module bundled by esbuild. A packed
// GPTQ qweight is read the same way: in slabs of packed rows, never whole nor as its f32 weight.
import fs from 'node:fs';
import path from 'node:path';
import { buildSync } from 'esbuild';
import { expect, it } from 'vitest';
import { REPO_ROOT } from '../../../test/support/fixtures';
import { peakRss } from '../../../test/support/peak-rss';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('stats-mem-');
const MB = 1024 * 1024;

/** A safetensors file holding `tensors` (key → dtype, shape, bytes per element), their data a hole (zeros). */
function sparse(file: string, tensors: Record<string, [string, number[], number]>): void {
  const header: Record<string, unknown> = {};
  let at = 0;
  for (const [key, [dtype, shape, size]] of Object.entries(tensors)) {
    const bytes = shape.reduce((a, b) => a * b, size);
    header[key] = { dtype, shape, data_offsets: [at, at + bytes] };
    at += bytes;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const head = Buffer.alloc(8);
  head.writeBigUInt64LE(BigInt(json.length));
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(json)]));
  fs.truncateSync(file, 8 + json.length + at);
}

const sparseBf16 = (file: string, shape: [number, number]) => sparse(file, { w: ['BF16', shape, 2] });

/** `dir/model.safetensors`: a GPTQ v2 module `m` of `[out, in]`, group 128, zeros throughout; its config.json. */
function sparseGptq(dir: string, out: number, inF: number): string {
  fs.mkdirSync(dir);
  const groups = inF / 128;
  sparse(path.join(dir, 'model.safetensors'), {
    'm.qweight': ['I32', [inF / 8, out], 4],
    'm.qzeros': ['I32', [groups, out / 8], 4],
    'm.scales': ['F16', [groups, out], 2],
  });
  const quantization_config = { quant_method: 'gptq', bits: 4, group_size: 128, checkpoint_format: 'gptq_v2', desc_act: false };
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ model_type: 'llama', quantization_config }));
  return path.join(dir, 'model.safetensors');
}

/** The child script: prints `tensorStats(argv[2], argv[3])` (the head as its length). */
function statsScript(dir: string): string {
  const entry = path.join(dir, 'entry.ts');
  fs.writeFileSync(
    entry,
    `import { tensorStats } from ${JSON.stringify(path.join(REPO_ROOT, 'core/src/view/tensor-stats.ts'))};\n` +
      `tensorStats(process.argv[2], process.argv[3]).then((s) => console.log(JSON.stringify({ ...s, head: s.head.length })));\n`,
  );
  const script = path.join(dir, 'stats.cjs');
  buildSync({ entryPoints: [entry], bundle: true, platform: 'node', format: 'cjs', outfile: script, logLevel: 'error' });
  return script;
}

it('summarizes a 256 MB bf16 tensor with a peak RSS within 128 MB of a 4 KB one (chunks, not the 256 MB, nor its 512 MB in f32)', () => {
  const dir = tmp();
  const script = statsScript(dir);
  const big = path.join(dir, 'big.safetensors');
  const tiny = path.join(dir, 'tiny.safetensors');
  sparseBf16(big, [8192, 16384]);
  sparseBf16(tiny, [32, 64]);
  const t = peakRss(dir, [script, tiny, 'w']);
  const b = peakRss(dir, [script, big, 'w']);
  expect(b.status, b.stderr).toBe(0);
  expect(t.status, t.stderr).toBe(0);
  const s = JSON.parse(b.stdout) as { count: number; min: number; max: number; std: number; histogram: { counts: number[] } };
  expect([s.count, s.min, s.max, s.std]).toEqual([8192 * 16384, 0, 0, 0]);
  expect(s.histogram.counts[0]).toBe(8192 * 16384);
  expect((b.kb - t.kb) / 1024, `peak ${b.kb} KiB vs ${t.kb} KiB`).toBeLessThan(128);
  expect(fs.statSync(big).size).toBeGreaterThan(256 * MB);
});

it('summarizes a GPTQ qweight of a 512 MB f32 weight (64 MB packed) with a peak RSS within 48 MB of a small one (15 MB measured: slabs, not the 64 MB packed nor 512 MB f32)', () => {
  const dir = tmp();
  const script = statsScript(dir);
  const big = sparseGptq(path.join(dir, 'big'), 8192, 16384);
  const small = sparseGptq(path.join(dir, 'small'), 64, 256);
  const t = peakRss(dir, [script, small, 'm.qweight']);
  const b = peakRss(dir, [script, big, 'm.qweight']);
  expect(b.status, b.stderr).toBe(0);
  expect(t.status, t.stderr).toBe(0);
  const s = JSON.parse(b.stdout) as { count: number; shape: number[]; min: number; max: number; packed: { format: string } };
  // zero codes, zero points and scales: every dequantized value is 0 · (0 − 0)
  expect([s.count, s.shape, s.min, s.max, s.packed.format]).toEqual([8192 * 16384, [8192, 16384], 0, 0, 'gptq']);
  expect((b.kb - t.kb) / 1024, `peak ${b.kb} KiB vs ${t.kb} KiB`).toBeLessThan(48);
});
