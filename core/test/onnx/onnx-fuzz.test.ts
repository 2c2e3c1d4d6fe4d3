/**
 * Property tests of the ONNX codec and summary: random valid models (raw and typed
 * initializers, symbolic dims, random consumers, metadata) agree between the summary and the
 * full decode and round-trip; their mutations (flips, truncations, splices, overwrites,
 * random bytes) end in a result or one FormatError naming the file — never another error.
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tempDirs } from '../../../test/support/temp';
import { DTYPE_SIZE, type DType } from '../../src/formats/dtype';
import {
  decodeModel,
  encodeModel,
  makeNode,
  makeTensor,
  makeValueInfo,
  readInitializerBytes,
  summarizeOnnx,
  summarizeOnnxBytes,
  tensorBytes,
  type ModelProto,
  type TensorProto,
} from '../../src/formats/onnx';
import { mutated, outcome, runFuzz, runFuzzAsync, tally } from '../support/fuzz-harness';

const FILE = 'fuzz.onnx';
const tmp = tempDirs('ws-fuzz-onnx-')();

const name = fc.oneof(
  fc.constantFrom('w', 'model.layers.0.mlp.up_proj.weight', 'onnx::MatMul_12'),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }),
);
const dims = fc.array(fc.nat(4), { maxLength: 3 });

const tensor: fc.Arbitrary<TensorProto> = fc
  .tuple(fc.constantFrom<DType>('F32', 'F16', 'BF16', 'I64', 'I8', 'BOOL'), dims, fc.boolean(), fc.integer())
  .map(([dt, d, typed, seed]) => {
    const n = d.reduce((a, b) => a * b, 1);
    const raw = Uint8Array.from({ length: n * DTYPE_SIZE[dt] }, (_, i) => (seed + i * 31) & 0xff);
    const t = makeTensor('', dt, d, raw);
    if (typed && dt === 'F32') return { ...t, rawData: undefined, floatData: Array.from({ length: n }, (_, i) => i - (seed % 7)) };
    if (typed && dt === 'I64') return { ...t, rawData: undefined, int64Data: Array.from({ length: n }, (_, i) => i * (seed % 1000)) };
    return t;
  });

const model: fc.Arbitrary<ModelProto> = fc
  .record({
    inits: fc.uniqueArray(fc.tuple(name, tensor), { selector: ([n]) => n, maxLength: 5 }),
    inputs: fc.uniqueArray(
      fc.tuple(
        name.map((n) => `in:${n}`),
        fc.array(fc.oneof(fc.nat(64), fc.constantFrom('batch', 'seq')), { maxLength: 3 }),
      ),
      { selector: ([n]) => n, maxLength: 3 },
    ),
    ops: fc.array(fc.tuple(fc.constantFrom('MatMul', 'Gather', 'Add', 'Mul'), fc.array(fc.nat(7), { maxLength: 3 })), { maxLength: 6 }),
    meta: fc.array(fc.tuple(fc.string({ maxLength: 8 }), fc.string({ maxLength: 40 })), { maxLength: 3 }),
    ir: fc.integer({ min: 3, max: 11 }),
  })
  .map(({ inits, inputs, ops, meta, ir }) => {
    const names = [...inits.map(([n]) => n), ...inputs.map(([n]) => n)];
    return {
      irVersion: ir,
      opsetImport: [{ domain: '', version: 17 }],
      metadataProps: meta.map(([key, value]) => ({ key, value })),
      graph: {
        name: 'fuzz',
        node: ops.map(([op, ins], i) =>
          makeNode(
            op,
            ins.map((k) => names[k % Math.max(1, names.length)] ?? ''),
            [`o${i}`],
          ),
        ),
        initializer: inits.map(([n, t]) => ({ ...t, name: n })),
        input: inputs.map(([n, d]) => makeValueInfo(n, 'F32', d)),
        output: [makeValueInfo('o0', 'F32', [1])],
      },
    };
  });

describe('ONNX fuzz', () => {
  it('valid models: summary agrees with the full decode, and they round-trip', async () => {
    let k = 0;
    await runFuzzAsync('onnx-valid', 150, model, async (m) => {
      const bytes = encodeModel(m);
      const file = path.join(tmp, `v${k++ % 4}.onnx`);
      fs.writeFileSync(file, bytes);
      const d = decodeModel(bytes, file);
      expect(decodeModel(encodeModel(d), file)).toEqual(d);
      const s = await summarizeOnnx(file);
      expect(s.inputs.map((v) => [v.name, v.dims])).toEqual(
        m.graph!.input!.map((v) => [v.name, v.type!.tensorType!.shape!.dim!.map((x) => x.dimValue ?? x.dimParam)]),
      );
      expect(s.initializers.map((t) => [t.name, t.dims, t.dataType])).toEqual(
        d.graph!.initializer!.map((t) => [t.name, t.dims, t.dataType]),
      );
      for (const [i, t] of d.graph!.initializer!.entries()) {
        expect(Buffer.from(await readInitializerBytes(file, s.initializers[i]!)).equals(Buffer.from(tensorBytes(t)))).toBe(true);
      }
      for (const nm of Object.keys(s.consumers)) {
        const want = [...new Set(m.graph!.node!.filter((n) => n.input!.includes(nm)).map((n) => n.opType!))].sort();
        expect([...s.consumers[nm]!].sort()).toEqual(want);
      }
      expect(s.nodeCount).toBe(m.graph!.node!.length);
      expect({ ...s.metadata }).toEqual(Object.fromEntries(m.metadataProps!.map((p) => [p.key, p.value])));
    });
  });

  it('mutated models: a result or one FormatError, from both paths', () => {
    tally.reset();
    runFuzz('onnx-mutated', 400, mutated(model.map((m) => encodeModel(m))), (b) => {
      const full = outcome(FILE, () => decodeModel(b, FILE));
      const summary = outcome(FILE, () => summarizeOnnxBytes(b, FILE));
      // decodeModel runs the same wire walk first: it can only accept what the summary accepts
      if (full.ok) expect(summary.ok).toBe(true);
    });
    expect(tally.ok).toBeGreaterThan(0);
    expect(tally.refused).toBeGreaterThan(0);
  });
});
