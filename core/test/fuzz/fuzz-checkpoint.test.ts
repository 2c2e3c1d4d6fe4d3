/**
 * Fuzzing the checkpoint view (model.safetensors.index.json + shards): hostile indexes (paths
 * leaving the directory, NUL, non-strings, duplicate keys, NaN, deep JSON, unicode keys, keys
 * in the wrong shard) and mutated shard headers. `Checkpoint.open` must give a view whose every
 * tensor reads back its declared size, or one FormatError — never another exception, never a
 * read outside the checkpoint directory.
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tempDirs } from '../../../test/support/temp';
import { Checkpoint } from '../../src/formats/safetensors';
import { isInside } from '../../src/paths';
import { mutated, outcomeAsync, runFuzzAsync, tally } from '../support/fuzz-harness';

const root = tempDirs('ws-fuzz-ck-')();
// A real safetensors file outside the checkpoint directory: an index must never reach it.
fs.writeFileSync(path.join(root, 'outside.safetensors'), shard({ secret: 4 }));

/** A safetensors image of U8 tensors `{key: length}`. */
function shard(tensors: Record<string, number>): Uint8Array {
  const header: Record<string, unknown> = {};
  let off = 0;
  for (const [k, n] of Object.entries(tensors)) {
    header[k] = { dtype: 'U8', shape: [n], data_offsets: [off, off + n] };
    off += n;
  }
  const h = Buffer.from(JSON.stringify(header));
  const out = Buffer.alloc(8 + h.length + off, 0x5a);
  out.writeBigUInt64LE(BigInt(h.length), 0);
  h.copy(out, 8);
  return out;
}

const A = { 'model.embed_tokens.weight': 8, 'model.norm.weight': 2 };
const B = { 'lm_head.weight': 8, 'модель.ключ': 1 };
const GOOD_MAP: Record<string, string> = {
  'model.embed_tokens.weight': 'model-00001-of-00002.safetensors',
  'model.norm.weight': 'model-00001-of-00002.safetensors',
  'lm_head.weight': 'model-00002-of-00002.safetensors',
  'модель.ключ': 'model-00002-of-00002.safetensors',
};
const HOSTILE_NAMES = [
  '../outside.safetensors',
  '/etc/passwd',
  `${root}/outside.safetensors`,
  'a\u0000b.safetensors',
  '',
  'sub/../../outside.safetensors',
  '..\\outside.safetensors',
  'C:\\x.safetensors',
  'x'.repeat(300),
  'missing.safetensors',
  'model-00002-of-00002.safetensors',
  '.',
];

const indexText = fc.oneof(
  // Structure-level: some weight_map entries replaced.
  fc
    .array(
      fc.tuple(
        fc.constantFrom(...Object.keys(GOOD_MAP), 'extra.key', ''),
        fc.oneof(fc.constantFrom(...HOSTILE_NAMES), fc.constantFrom<unknown>(1, null, [], {}, true)),
      ),
      { maxLength: 3 },
    )
    .map((edits) => {
      const m: Record<string, unknown> = { ...GOOD_MAP };
      for (const [k, v] of edits) m[k] = v;
      return JSON.stringify({ metadata: { total_size: 19 }, weight_map: m });
    }),
  fc.constantFrom(
    `{"weight_map": {"model.norm.weight": "model-00001-of-00002.safetensors", "model.norm.weight": "../outside.safetensors"}}`,
    `{"weight_map": {"model.norm.weight": NaN}}`,
    `{"metadata": {"total_size": Infinity}, "weight_map": {}}`,
    `{"weight_map": ${'['.repeat(50000)}${']'.repeat(50000)}}`,
    `{"metadata": [], "weight_map": {}}`,
    `{"weight_map": "model-00001-of-00002.safetensors"}`,
    `[]`,
    ``,
    `\ufeff{"weight_map": {}}`,
  ),
  // Text-level mutations of the good index.
  mutated(fc.constant(new Uint8Array(Buffer.from(JSON.stringify({ metadata: { total_size: 19 }, weight_map: GOOD_MAP }, null, 2))))).map(
    (b) => Buffer.from(b).toString('latin1'),
  ),
);

const caseArb = fc.record({
  index: indexText,
  shardA: fc.oneof({ weight: 4, arbitrary: fc.constant(shard(A)) }, { weight: 1, arbitrary: mutated(fc.constant(shard(A))) }),
});

describe('checkpoint view fuzz', () => {
  it('opens or refuses hostile indexes and mutated shards (seeded)', async () => {
    let n = 0;
    tally.reset();
    await runFuzzAsync('checkpoint-index', 700, caseArb, async ({ index, shardA }) => {
      const dir = path.join(root, `ck${n++ % 4}`);
      fs.rmSync(dir, { recursive: true, force: true });
      fs.mkdirSync(dir);
      fs.writeFileSync(path.join(dir, 'model-00001-of-00002.safetensors'), shardA);
      fs.writeFileSync(path.join(dir, 'model-00002-of-00002.safetensors'), shard(B));
      fs.writeFileSync(path.join(dir, 'model.safetensors.index.json'), index, 'latin1');
      const r = await outcomeAsync(path.join(dir, ''), () => Checkpoint.open(dir));
      if (!r.ok) return;
      const ck = r.value;
      for (const f of ck.files) expect(isInside(dir, f)).toBe(true);
      for (const k of ck.keys()) {
        const t = ck.get(k)!;
        expect(isInside(dir, t.file)).toBe(true);
        expect((await ck.read(k)).length).toBe(t.byteLength);
      }
    });
    expect(tally.ok).toBeGreaterThan(20);
    expect(tally.refused).toBeGreaterThan(20);
  });

  it('accepts the unmodified checkpoint (the fuzz baseline is valid)', async () => {
    const dir = path.join(root, 'good');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'model-00001-of-00002.safetensors'), shard(A));
    fs.writeFileSync(path.join(dir, 'model-00002-of-00002.safetensors'), shard(B));
    fs.writeFileSync(path.join(dir, 'model.safetensors.index.json'), JSON.stringify({ weight_map: GOOD_MAP }));
    const ck = await Checkpoint.open(dir);
    expect(ck.keys().sort()).toEqual(Object.keys(GOOD_MAP).sort());
  });
});
