/**
 * Issue #28 point 4 (the FP8 half): NaN, ±Inf or 0 in `weight_scale_inv` used to dequantize to
 * NaN / Inf / zero weights with exit 0, and so did FP8 NaN codes. prepare now refuses both,
 * naming the file and the tensor. (Scales are checked as they are read; NaN codes are counted
 * in the dequantization pass itself, and admitted with --allow-overflow: trust-overflow.test.ts
 * covers the narrowing half.)
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { cliInProcess } from '../../../test/support/cli';
import { tempDirs } from '../../../test/support/temp';
import { readSafetensorsHeaderSync } from '../../src/formats/safetensors';
import { quantizeCheckpoint } from '../support/fp8-support';

const tmp = tempDirs('ws-trust-w-');
/** The CLI's error line (progress lines come before it on stderr). */
const lastLine = (t: string) => t.trim().split('\n').at(-1);
const cli = (args: string[]) => cliInProcess(args, { env: { WEIGHT_SPEC_DEBUG: '', WEIGHT_SPEC_PROGRESS: 'off' } });

/** Overwrites element `i` of tensor `key` (4-byte f32 or 1-byte FP8) in the shard holding it. */
function poke(dir: string, key: string, i: number, bytes: number[]): string {
  for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.safetensors'))) {
    const file = path.join(dir, f);
    const t = readSafetensorsHeaderSync(file).tensors.get(key);
    if (!t) continue;
    const buf = fs.readFileSync(file);
    buf.set(bytes, t.dataOffset + i * bytes.length);
    fs.writeFileSync(file, buf);
    return file;
  }
  throw new Error(`${key} not found`);
}

describeFixtures('untrusted FP8 weights', () => {
  const W = 'model.layers.0.self_attn.q_proj';
  for (const [what, value, shown] of [
    ['NaN', [0x00, 0x00, 0xc0, 0x7f], 'NaN'],
    ['Infinity', [0x00, 0x00, 0x80, 0x7f], 'Infinity'],
    ['zero', [0, 0, 0, 0], '0'],
  ] as const) {
    it(`a scale of ${what} is refused, naming the file and the tensor`, async () => {
      const src = path.join(tmp(), 'fp8');
      await quantizeCheckpoint(path.join(fixturesDir(), 'llama'), src, { method: 'fp8', block: [32, 32] });
      const file = poke(src, `${W}.weight_scale_inv`, 1, [...value]);
      const out = path.join(path.dirname(src), 'out');
      const r = await cli(['prepare', '--checkpoint', src, '--dtype', 'float32', '--out', out]);
      expect(r.code).toBe(1);
      expect(lastLine(r.stderr)).toBe(
        `weight-spec: ${file}: FP8 scale tensor "${W}.weight_scale_inv" holds ${shown} at element 1; ` +
          'refusing to dequantize its weights with it (they would come out NaN, infinite or zero)',
      );
      expect(fs.existsSync(out)).toBe(false);
    });
  }

  it('an FP8 NaN code (0x7f) in a weight is refused, naming the tensor', async () => {
    const src = path.join(tmp(), 'fp8');
    await quantizeCheckpoint(path.join(fixturesDir(), 'llama'), src, { method: 'fp8', block: [32, 32] });
    const file = poke(src, `${W}.weight`, 5, [0x7f]);
    const out = path.join(path.dirname(src), 'out');
    const r = await cli(['prepare', '--checkpoint', src, '--dtype', 'float32', '--out', out]);
    expect(r.code).toBe(1);
    expect(lastLine(r.stderr)).toBe(
      `weight-spec: ${file}: "${W}.weight" would hold 1 non-finite value (1 FP8 NaN code); ` +
        'refusing to prepare them (--allow-overflow keeps them and records the count)',
    );
    expect(fs.existsSync(out)).toBe(false);
  });

  it('--allow-overflow admits FP8 NaN codes, counted per tensor in the manifest and the summary', async () => {
    const src = path.join(tmp(), 'fp8');
    await quantizeCheckpoint(path.join(fixturesDir(), 'llama'), src, { method: 'fp8', block: [32, 32] });
    poke(src, `${W}.weight`, 5, [0x7f]);
    poke(src, `${W}.weight`, 9, [0xff]);
    for (const dtype of ['float32', 'float16']) {
      const out = path.join(path.dirname(src), `out-${dtype}`);
      const r = await cli(['prepare', '--checkpoint', src, '--dtype', dtype, '--out', out, '--allow-overflow']);
      expect(r.code, r.stderr).toBe(0);
      const manifest = JSON.parse(fs.readFileSync(path.join(out, '.checkpoint_prepared.json'), 'utf8')) as { non_finite?: unknown };
      expect(manifest.non_finite).toEqual({ [`${W}.weight`]: 2 });
      expect(r.stdout).toContain(`prepare: kept ±Inf/NaN values (--allow-overflow) in 1 tensor(s): ${W}.weight (2)`);
    }
  });
});
