/**
 * The ONNX codec and the metadata-only summary against every fixture's real
 * `torch.onnx.export` output: full decode → encode → decode is lossless, and the summary
 * (which never reads tensor payloads) agrees field by field with the full decode.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { describeFixtures, fixturesDir, LEGACY_ONNX_FOLDERS } from '../../../test/support/fixtures';
import {
  decodeModel,
  encodeModel,
  readInitializerBytes,
  summarizeOnnx,
  tensorBytes,
  type ModelProto,
  type ValueInfoProto,
} from '../../src/formats/onnx';

const legacy = (fam: string) => path.join(fixturesDir(), fam, 'legacy.onnx');

function dimsOf(v: ValueInfoProto): (number | string)[] {
  return (v.type?.tensorType?.shape?.dim ?? []).map((d) => d.dimValue ?? d.dimParam ?? '');
}

describeFixtures('ONNX codec and summary over the fixtures', () => {
  test('every fixture legacy.onnx is covered', () => {
    const found = fs
      .readdirSync(fixturesDir())
      .filter((d) => fs.existsSync(legacy(d)))
      .sort();
    expect(found).toEqual([...LEGACY_ONNX_FOLDERS].sort());
  });

  for (const fam of LEGACY_ONNX_FOLDERS) {
    test(`${fam}: decode → encode → decode is lossless`, () => {
      const bytes = fs.readFileSync(legacy(fam));
      const m1 = decodeModel(bytes, legacy(fam));
      expect(m1.graph!.node!.length).toBeGreaterThan(10);
      expect(m1.graph!.initializer!.length).toBeGreaterThan(3);
      const again = encodeModel(m1);
      // torch writes fields in schema order, so nothing dropped means the same bytes back;
      // a field unknown to our schema would be missing here. The same bytes decode to the same
      // model, so no deep comparison of the two decodes is needed (it took ~20 s on mixtral).
      expect(again.length).toBe(bytes.length);
      expect(Buffer.from(again).equals(bytes)).toBe(true);
    });

    test(`${fam}: summary agrees with the full decode`, async () => {
      const file = legacy(fam);
      const m: ModelProto = decodeModel(fs.readFileSync(file), file);
      const s = await summarizeOnnx(file);
      const g = m.graph!;
      expect(s.irVersion).toBe(m.irVersion);
      expect(s.producerName).toBe(m.producerName);
      expect(s.opsets).toEqual(m.opsetImport!.map((o) => ({ domain: o.domain ?? '', version: o.version })));
      expect(s.metadata).toEqual(Object.fromEntries((m.metadataProps ?? []).map((p) => [p.key, p.value])));
      for (const [mine, theirs] of [
        [s.inputs, g.input!],
        [s.outputs, g.output!],
      ] as const) {
        expect(mine.map((v) => v.name)).toEqual(theirs.map((v) => v.name));
        expect(mine.map((v) => v.elemType)).toEqual(theirs.map((v) => v.type!.tensorType!.elemType));
        expect(mine.map((v) => v.dims)).toEqual(theirs.map(dimsOf));
      }
      expect(s.nodeCount).toBe(g.node!.length);
      const ops: Record<string, number> = {};
      for (const n of g.node!) ops[n.opType!] = (ops[n.opType!] ?? 0) + 1;
      expect({ ...s.opTypes }).toEqual(ops);
      expect(s.initializers.map((t) => t.name)).toEqual(g.initializer!.map((t) => t.name));
      for (const [i, t] of g.initializer!.entries()) {
        const si = s.initializers[i]!;
        expect(si.dims).toEqual(t.dims);
        expect(si.dataType).toBe(t.dataType);
        const want = tensorBytes(t);
        expect(si.byteLength).toBe(want.length);
        expect(Buffer.from(await readInitializerBytes(file, si)).equals(want)).toBe(true);
      }
      // consumers: recomputed from the decoded nodes
      for (const name of [...g.input!.map((v) => v.name!), ...g.initializer!.map((t) => t.name!)]) {
        const want = [...new Set(g.node!.filter((n) => n.input!.includes(name)).map((n) => n.opType!))].sort();
        expect([...s.consumers[name]!].sort()).toEqual(want);
      }
      expect(s.consumers['input_ids']).toContain('Gather');
    });
  }
});
