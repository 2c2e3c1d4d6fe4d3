/**
 * Issue #14, points 8, 11 and 13 on real files made here: a hostile safetensors header is
 * refused from a scan of its text before JSON.parse (no hang, under 100 MB), keys that
 * are Object.prototype names survive every weight map, and an absurd header length says "not
 * a safetensors file" instead of printing a file's first 8 bytes as a number.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Checkpoint, readSafetensorsHeader, writeSafetensors } from '../../src/formats/safetensors';
import { runPrepare } from '../../src/prepare';
import { REPO_ROOT } from '../../../test/support/fixtures';
import { peakRss } from '../../../test/support/peak-rss';
import { tempDirs } from '../../../test/support/temp';
import { workerPath } from '../support/prepare-support';

const tmp = tempDirs('ws-formats-safety-');
const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');

/** A safetensors file whose header is `text` (no data). */
function rawSafetensors(file: string, text: string): string {
  const json = Buffer.from(text);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  fs.writeFileSync(file, Buffer.concat([len, json]));
  return file;
}

/** Peak RSS (KB) and stderr of `weight-spec inspect <file>` in a child process. */
function inspectPeak(file: string): { kb: number; stderr: string } {
  const r = peakRss(tmp(), [CLI, 'inspect', file]);
  return { kb: r.kb, stderr: r.stderr };
}

describe('hostile safetensors headers are scanned before JSON.parse (#14.8)', () => {
  it('a 20 MB [[[…]]] and a 18 MB [[],[],…] header: refused without a hang (bound 10 s for a loaded CI machine), < 100 MB over a tiny file', async () => {
    const dir = tmp();
    const n = 10_000_000;
    const deep = rawSafetensors(path.join(dir, 'deep.safetensors'), `{"__metadata__":${'['.repeat(n)}${']'.repeat(n)}}`);
    const wide = rawSafetensors(path.join(dir, 'wide.safetensors'), `{"a":[${'[],'.repeat(6_000_000)}[]]}`);
    for (const [file, msg] of [
      [deep, /header nests deeper than 3 levels \(at byte \d+\)$/],
      [wide, /header holds 6000003 arrays and objects for 1 property names \(not the shape of a header\)$/],
    ] as const) {
      const t0 = performance.now();
      await expect(readSafetensorsHeader(file)).rejects.toThrow(msg);
      expect(performance.now() - t0, file).toBeLessThan(10_000);
    }
    // 800,000 keys of 3 numbers each: the right shape, but millions of properties.
    const keys = rawSafetensors(
      path.join(dir, 'keys.safetensors'),
      `{${Array.from({ length: 800_000 }, (_, i) => `"k${i}":{"a":1,"b":2,"c":3}`).join(',')}}`,
    );
    const t1 = performance.now();
    await expect(readSafetensorsHeader(keys)).rejects.toThrow(/header names 3200000 properties, over the limit of 1000000$/);
    expect(performance.now() - t1).toBeLessThan(10_000);
    const base = inspectPeak(rawSafetensors(path.join(dir, 'tiny.safetensors'), '{}'));
    const peak = inspectPeak(deep);
    expect(peak.stderr).toMatch(/deep\.safetensors: header nests deeper than 3 levels/);
    expect(peak.kb - base.kb, `peak RSS ${peak.kb} KB vs ${base.kb} KB for a tiny file`).toBeLessThan(100 * 1024);
  });
});

describe('a large valid header (#14.8)', () => {
  it('200,000 tensors are listed by inspect (the table no longer spreads every row into Math.max)', () => {
    const dir = tmp();
    const entries = Array.from({ length: 200_000 }, (_, i) => `"k${i}":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}`);
    const file = rawSafetensors(path.join(dir, 'many.safetensors'), `{${entries.join(',')}}`);
    const r = spawnSync(process.execPath, [CLI, 'inspect', file], { encoding: 'utf8', maxBuffer: 1 << 28 });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.trimEnd().split('\n').pop()).toBe(`${file}: 200000 tensors, 0 bytes (0 B) in 1 file`);
  });
});

describe('keys named like Object.prototype members (#14.11)', () => {
  const keys = ['__proto__', 'toString', 'constructor', 'hasOwnProperty'];
  it('are written, read, prepared and indexed like any other key', async () => {
    const dir = tmp();
    const src = path.join(dir, 'src');
    fs.mkdirSync(src);
    await writeSafetensors(
      path.join(src, 'model-00001-of-00002.safetensors'),
      keys.slice(0, 2).map((key, i) => ({ key, dtype: 'F32', shape: [2], data: new Uint8Array(new Float32Array([i, i + 0.5]).buffer) })),
    );
    await writeSafetensors(
      path.join(src, 'model-00002-of-00002.safetensors'),
      keys.slice(2).map((key, i) => ({ key, dtype: 'F32', shape: [2], data: new Uint8Array(new Float32Array([i + 2, i + 2.5]).buffer) })),
    );
    const weightMap = Object.create(null) as Record<string, string>;
    keys.forEach((k, i) => (weightMap[k] = `model-0000${i < 2 ? 1 : 2}-of-00002.safetensors`));
    fs.writeFileSync(path.join(src, 'model.safetensors.index.json'), JSON.stringify({ metadata: {}, weight_map: weightMap }));
    fs.writeFileSync(path.join(src, 'config.json'), '{}');
    const ck = await Checkpoint.open(src);
    expect(ck.keys().sort()).toEqual([...keys].sort());
    const out = path.join(dir, 'prepared');
    await runPrepare({ checkpoint: src, dtype: 'float16', out, workers: 0, workerPath: workerPath() });
    const prepared = await Checkpoint.open(out);
    expect(prepared.keys().sort()).toEqual([...keys].sort());
    const index = JSON.parse(fs.readFileSync(path.join(out, 'model.safetensors.index.json'), 'utf8')) as {
      weight_map: Record<string, string>;
    };
    expect(Object.keys(index.weight_map).sort()).toEqual([...keys].sort());
    expect(Array.from(new Uint16Array((await prepared.read('__proto__')).buffer))).toEqual([0x0000, 0x3800]);
  });
});

describe('absurd header lengths (#14.13)', () => {
  it('say "not a safetensors file", without the first 8 bytes as a number', async () => {
    const dir = tmp();
    const text = path.join(dir, 'notes.safetensors');
    fs.writeFileSync(text, 'This is a text file, not weights.\n');
    const err = await readSafetensorsHeader(text).catch((e: Error) => e);
    expect(String((err as Error).message)).toBe(
      `${text}: not a safetensors file (its first 8 bytes are no header length up to the 100000000-byte limit) (at byte 0)`,
    );
    const digits = Buffer.from('This is ').readBigUInt64LE(0).toString();
    expect(String((err as Error).message)).not.toContain(digits);
  });
});
