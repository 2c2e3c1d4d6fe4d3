/**
 * Fuzzing the ONNX reader and its metadata summary. Models are encoded here at the protobuf
 * wire level (independently of the code under test), with hostile content — 2^60 dims, raw
 * data shorter than the dims claim, external data with huge offsets and escaping locations,
 * deep subgraph nesting — then byte-mutated, truncated and given lying length prefixes.
 * `decodeModel` and `summarizeOnnx` must answer with a value or one FormatError, bounded.
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tempDirs } from '../../../test/support/temp';
import { decodeModel, summarizeOnnx } from '../../src/formats/onnx';
import { len, sf, tag, varint, vf } from '../support/wire-bytes';
import { mutated, outcome, outcomeAsync, runFuzz, runFuzzAsync, tally } from '../support/fuzz-harness';

const tmp = tempDirs('ws-fuzz-onnx-')();

// ---- protobuf wire encoding (wire-bytes.ts) ----
const bf = len;

const DIMS = [0, 1, 2, 3, 7, 2 ** 31, 2 ** 53, 2 ** 60, -1];
const dim = fc.oneof({ weight: 6, arbitrary: fc.nat(4) }, { weight: 1, arbitrary: fc.constantFrom(...DIMS) });
const name = fc.oneof(
  fc.constantFrom('model.embed_tokens.weight', 'input_ids', 'onnx::MatMul_12', ''),
  fc.string({ unit: 'grapheme', maxLength: 10 }),
);
const LOCATIONS = ['w.safetensors', '../x.safetensors', '/etc/passwd', 'a\u0000b', 'x'.repeat(400), ''];

const tensorProto = fc
  .record({
    name,
    dims: fc.array(dim, { maxLength: 4 }),
    dataType: fc.oneof({ weight: 6, arbitrary: fc.constantFrom(1, 10, 16, 7) }, { weight: 1, arbitrary: fc.constantFrom(6, 0, 99) }),
    storage: fc.constantFrom('raw', 'float', 'external', 'none'),
    // Mostly the length the dims imply; sometimes a lie.
    rawLen: fc.oneof({ weight: 4, arbitrary: fc.constant(-1) }, { weight: 1, arbitrary: fc.nat(64) }),
    location: fc.oneof({ weight: 4, arbitrary: fc.constant('w.safetensors') }, { weight: 1, arbitrary: fc.constantFrom(...LOCATIONS) }),
    offset: fc.oneof({ weight: 4, arbitrary: fc.constantFrom(0, 8) }, { weight: 1, arbitrary: fc.constantFrom(2 ** 40, 2 ** 62) }),
    length: fc.oneof({ weight: 4, arbitrary: fc.constant(-1) }, { weight: 1, arbitrary: fc.constantFrom(0, 16, 2 ** 40, 2 ** 63) }),
  })
  .map((t) => {
    const size = { 1: 4, 10: 2, 16: 2, 7: 8 }[t.dataType as 1 | 10 | 16 | 7] ?? 1;
    const implied = t.dims.reduce((a, b) => a * b, 1) * size;
    const fits = Number.isSafeInteger(implied) && implied >= 0 && implied <= 4096;
    if (t.rawLen < 0) t.rawLen = fits ? implied : 8;
    if (t.length < 0) t.length = fits ? implied : 16;
    const body: number[] = [...t.dims.flatMap((d) => vf(1, d)), ...vf(2, t.dataType), ...sf(8, t.name)];
    if (t.storage === 'raw') body.push(...bf(9, new Uint8Array(t.rawLen)));
    if (t.storage === 'float') body.push(...bf(4, new Uint8Array(t.rawLen - (t.rawLen % 4)))); // packed floats
    if (t.storage === 'external') {
      for (const [k, v] of [
        ['location', t.location],
        ['offset', String(t.offset)],
        ['length', String(t.length)],
      ]) {
        body.push(...bf(13, [...sf(1, k!), ...sf(2, v!)]));
      }
      body.push(...vf(14, 1));
    }
    return body;
  });

const valueInfo = fc
  .record({
    name,
    dims: fc.array(fc.oneof(dim, fc.constantFrom('batch', 'seq_len')), { maxLength: 4 }),
    elem: fc.oneof({ weight: 5, arbitrary: fc.constantFrom(1, 7, 10, 16) }, { weight: 1, arbitrary: fc.constant(0) }),
  })
  .map((v) => {
    const dims = v.dims.flatMap((d) => bf(1, typeof d === 'string' ? sf(2, d) : vf(1, d)));
    const tensorType = [...vf(1, v.elem), ...bf(2, dims)];
    return [...sf(1, v.name), ...bf(2, bf(1, tensorType))];
  });

const node = fc
  .record({
    op: fc.constantFrom('MatMul', 'Gather', 'Add', 'If', ''),
    ins: fc.array(name, { maxLength: 3 }),
    outs: fc.array(name, { maxLength: 2 }),
  })
  .map((n) => [...n.ins.flatMap((s) => sf(1, s)), ...n.outs.flatMap((s) => sf(2, s)), ...sf(4, n.op)]);

const model = fc
  .record({
    ir: fc.oneof({ weight: 5, arbitrary: fc.constantFrom(7, 8, 9, 10) }, { weight: 1, arbitrary: fc.constantFrom(0, 2 ** 40) }),
    opset: fc.oneof({ weight: 5, arbitrary: fc.constantFrom(14, 17, 18) }, { weight: 1, arbitrary: fc.constant(0) }),
    inits: fc.array(tensorProto, { maxLength: 4 }),
    inputs: fc.array(valueInfo, { maxLength: 4 }),
    outputs: fc.array(valueInfo, { maxLength: 2 }),
    nodes: fc.array(node, { maxLength: 4 }),
    meta: fc.array(
      fc.tuple(
        fc.constantFrom('com.qti.aisw.extdata', 'k', ''),
        fc.oneof(fc.constant('{"version":5,"files":[],"inputs":[]}'), fc.string({ maxLength: 20 })),
      ),
      { maxLength: 2 },
    ),
  })
  .map((m) => {
    const graph = [
      ...m.nodes.flatMap((n) => bf(1, n)),
      ...sf(2, 'g'),
      ...m.inits.flatMap((t) => bf(5, t)),
      ...m.inputs.flatMap((v) => bf(11, v)),
      ...m.outputs.flatMap((v) => bf(12, v)),
    ];
    return Uint8Array.from([
      ...vf(1, m.ir),
      ...sf(2, 'fuzz'),
      ...bf(7, graph),
      ...bf(8, [...sf(1, ''), ...vf(2, m.opset)]),
      ...m.meta.flatMap(([k, v]) => bf(14, [...sf(1, k), ...sf(2, v)])),
    ]);
  });

/** Length-prefix lies: the graph field claims far more bytes than exist. */
const lies = fc
  .tuple(fc.constantFrom(2n ** 31n, 2n ** 60n, 2n ** 64n - 1n, 1000n), fc.constantFrom(5, 7, 14))
  .map(([lie, field]) => Uint8Array.from([...vf(1, 8), ...bf(field, [...sf(1, 'x')], lie)]));

/**
 * Subgraphs nested through If attributes, deeper than any real model. Written outside-in
 * with precomputed lengths (linear, not quadratic, in the depth).
 */
function nested(depth: number): Uint8Array {
  const leaf = sf(2, 'leaf');
  const opIf = sf(4, 'If');
  const attrName = sf(1, 'then_branch');
  const attrType = vf(20, 5);
  const graphLen: number[] = [leaf.length]; // graphLen[i] = bytes of the graph at nesting i
  const nodeLen: number[] = [];
  const attrLen: number[] = [];
  for (let i = 0; i < depth; i++) {
    const a = attrName.length + 1 + varint(graphLen[i]!).length + graphLen[i]! + attrType.length;
    const n = opIf.length + 1 + varint(a).length + a;
    attrLen.push(a);
    nodeLen.push(n);
    graphLen.push(1 + varint(n).length + n);
  }
  const out: number[] = [...vf(1, 8), ...tag(7, 2), ...varint(graphLen[depth]!)];
  for (let i = depth - 1; i >= 0; i--) {
    out.push(
      ...tag(1, 2),
      ...varint(nodeLen[i]!),
      ...opIf,
      ...tag(5, 2),
      ...varint(attrLen[i]!),
      ...attrName,
      ...tag(6, 2),
      ...varint(graphLen[i]!),
    );
  }
  out.push(...leaf);
  for (let i = 0; i < depth; i++) out.push(...attrType);
  return Uint8Array.from(out);
}

describe('ONNX reader fuzz', () => {
  it('decodes or refuses mutated models (seeded)', () => {
    tally.reset();
    runFuzz('onnx-decode', 1500, fc.oneof(mutated(model), lies), (bytes) => {
      outcome('fuzz.onnx', () => decodeModel(bytes, 'fuzz.onnx'));
    });
    expect(tally.ok).toBeGreaterThan(50);
    expect(tally.refused).toBeGreaterThan(50);
  });

  it('summarizes or refuses mutated model files (seeded)', async () => {
    let i = 0;
    tally.reset();
    await runFuzzAsync('onnx-summary', 600, fc.oneof(mutated(model), lies), async (bytes) => {
      const f = path.join(tmp, `m${i++ % 4}.onnx`);
      fs.writeFileSync(f, bytes);
      const r = await outcomeAsync(f, () => summarizeOnnx(f));
      if (!r.ok) return;
      const s = r.value;
      expect(Number.isInteger(s.nodeCount) && s.nodeCount >= 0).toBe(true);
      for (const init of s.initializers) expect(Number.isFinite(init.byteLength)).toBe(true);
    });
    expect(tally.ok).toBeGreaterThan(20);
  });

  it('refuses or bounds 100 000-deep subgraph nesting without a stack overflow', async () => {
    for (const depth of [20, 100_000]) {
      const bytes = nested(depth);
      const r = outcome('deep.onnx', () => decodeModel(bytes, 'deep.onnx'));
      // The encoding is well-formed: a shallow nesting must decode (protobufjs caps depth at 100 messages).
      if (depth === 20) expect(r.ok ? 'ok' : r.error.message).toBe('ok');
      const f = path.join(tmp, 'deep.onnx');
      fs.writeFileSync(f, bytes);
      await outcomeAsync(f, () => summarizeOnnx(f));
    }
  });
});
