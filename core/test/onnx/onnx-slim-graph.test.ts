/**
 * Slimming of a bound model's graph (formats/onnx/slim-graph.ts) on models made here: the
 * slimmed model runs in ONNX Runtime and gives the outputs worked out by hand, identical
 * Constant nodes are shared (but never one that is a graph output), node names and doc
 * strings go, intermediate values get short names, the interface keeps its names, and a
 * graph with a subgraph keeps the values its subgraphs name (and the subgraphs' own names).
 */
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import {
  decodeModel,
  encodeModel,
  makeAttribute,
  makeNode,
  makeTensor,
  makeValueInfo,
  type ModelProto,
  type NodeProto,
} from '../../src/formats/onnx';
import { parseWireModel, rewriteModel } from '../../src/formats/onnx/wire-model';
import { slimGraph } from '../../src/formats/onnx/slim-graph';

const f32 = (xs: number[]) => new Uint8Array(new Float32Array(xs).buffer);
const scalar = (v: number) => makeAttribute('value', 'tensor', makeTensor('', 'F32', [], f32([v])));

/** Y = (X·2)·2 + 3, K = 2 (a graph output made by a Constant equal to the first one). */
function model(withIf: boolean): ModelProto {
  const nodes: NodeProto[] = [
    makeNode('Constant', [], ['/m/Constant_output_0'], [scalar(2)], '/m/Constant'),
    makeNode('Mul', ['X', '/m/Constant_output_0'], ['/m/Mul_output_0'], [], '/m/Mul'),
    makeNode('Constant', [], ['/m/Constant_1_output_0'], [scalar(2)], '/m/Constant_1'),
    makeNode('Mul', ['/m/Mul_output_0', '/m/Constant_1_output_0'], ['/m/Mul_1_output_0'], [], '/m/Mul_1'),
    makeNode('Constant', [], ['/m/Constant_2_output_0'], [scalar(3)], '/m/Constant_2'),
    makeNode('Add', ['/m/Mul_1_output_0', '/m/Constant_2_output_0'], ['Y'], [], '/m/Add'),
    makeNode('Constant', [], ['K'], [scalar(2)], '/m/Constant_3'),
  ];
  nodes[1]!.docString = 'a doc string only a reader needs';
  const outputs = [makeValueInfo('Y', 'F32', [2]), makeValueInfo('K', 'F32', [])];
  if (withIf) {
    // The branches read the outer value /m/Mul_output_0 by name.
    const branch = (op: string) => ({
      name: op,
      node: [makeNode(op, ['/m/Mul_output_0'], [`${op}_out`], [], `/m/If/${op}`)],
      output: [makeValueInfo(`${op}_out`, 'F32', [2])],
    });
    nodes.push(
      makeNode(
        'Constant',
        [],
        ['/m/cond'],
        [makeAttribute('value', 'tensor', makeTensor('', 'BOOL', [], Uint8Array.of(1)))],
        '/m/Constant_4',
      ),
    );
    nodes.push(
      makeNode(
        'If',
        ['/m/cond'],
        ['Z'],
        [
          { name: 'then_branch', type: 5, g: branch('Neg') },
          { name: 'else_branch', type: 5, g: branch('Abs') },
        ],
        '/m/If',
      ),
    );
    outputs.push(makeValueInfo('Z', 'F32', [2]));
  }
  return {
    irVersion: 8,
    producerName: 'weight-spec-test',
    opsetImport: [{ domain: '', version: 17 }],
    graph: {
      name: 'slim',
      docString: 'the graph',
      node: nodes,
      input: [makeValueInfo('X', 'F32', [2])],
      output: outputs,
      valueInfo: [makeValueInfo('/m/Mul_output_0', 'F32', [2]), makeValueInfo('/m/Constant_1_output_0', 'F32', [])],
    },
  };
}

function slim(m: ModelProto): { before: Uint8Array; after: Uint8Array; shared: number } {
  const before = encodeModel(m);
  const w = parseWireModel(before, 'slim.onnx');
  const r = slimGraph(w, new Set(), 'slim.onnx');
  return { before, after: rewriteModel(w, { replace: r.replace }), shared: r.sharedConstants };
}

async function run(bytes: Uint8Array): Promise<Record<string, number[]>> {
  const s = await ort.InferenceSession.create(bytes);
  try {
    const out = await s.run({ X: new ort.Tensor('float32', Float32Array.from([1, -2]), [2]) });
    return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, Array.from(v.data as Float32Array)]));
  } finally {
    await s.release();
  }
}

describe('slimGraph', () => {
  it('shares identical constants, drops names and doc strings, shortens values; ORT computes the same', async () => {
    const { before, after, shared } = slim(model(false));
    expect(shared).toBe(1);
    // X = [1, -2]: (X·2)·2 + 3 = [7, -5]; K = 2
    expect(await run(before)).toEqual({ Y: [7, -5], K: [2] });
    expect(await run(after)).toEqual({ Y: [7, -5], K: [2] });
    expect(after.length).toBeLessThan(before.length);

    const g = decodeModel(after, 'slim.onnx').graph!;
    const constants = g.node!.filter((n) => n.opType === 'Constant');
    // The duplicate 2 is gone; the 2 that is the graph output K stays.
    expect(constants.map((n) => n.output)).toEqual([[expect.any(String)], [expect.any(String)], ['K']]);
    expect(g.node).toHaveLength(6);
    expect(g.node!.every((n) => !n.name && !n.docString)).toBe(true);
    expect(g.docString ?? '').toBe('');
    const [mul, mul1] = g.node!.filter((n) => n.opType === 'Mul');
    // Both multiplications read the one remaining constant 2.
    expect(mul1!.input![1]).toBe(mul!.input![1]);
    expect(mul!.input![0]).toBe('X');
    expect(g.node!.find((n) => n.opType === 'Add')!.output).toEqual(['Y']);
    const intermediate = g.node!.flatMap((n) => [...n.input!, ...n.output!]).filter((v) => !['X', 'Y', 'K'].includes(v));
    expect(intermediate.every((v) => v.length <= 2)).toBe(true);
    // value_info follows the renames; the dropped duplicate's entry goes with it.
    expect(g.valueInfo!.map((v) => v.name)).toEqual([mul!.output![0]]);
  });

  it('keeps the names a caller asks for', () => {
    const before = encodeModel(model(false));
    const w = parseWireModel(before, 'slim.onnx');
    const r = slimGraph(w, new Set(['/m/Mul_output_0']), 'slim.onnx');
    const g = decodeModel(rewriteModel(w, { replace: r.replace }), 'slim.onnx').graph!;
    expect(g.node!.find((n) => n.opType === 'Mul')!.output).toEqual(['/m/Mul_output_0']);
  });

  it('a graph with a subgraph keeps the values its subgraphs name, shortens and shares the rest', async () => {
    const { before, after, shared } = slim(model(true));
    // cond = true → Z = −(X·2) = [−2, 4]
    expect(await run(before)).toEqual({ Y: [7, -5], K: [2], Z: [-2, 4] });
    expect(await run(after)).toEqual({ Y: [7, -5], K: [2], Z: [-2, 4] });
    const g = decodeModel(after, 'slim.onnx').graph!;
    expect(g.node!.every((n) => !n.name)).toBe(true);
    expect(g.node).toHaveLength(9 - shared);
    // the branches read /m/Mul_output_0 by name: it keeps it; the second Mul's output is shortened
    const muls = g.node!.filter((n) => n.opType === 'Mul');
    expect(muls[0]!.output).toEqual(['/m/Mul_output_0']);
    expect(muls[1]!.output![0]!.length).toBeLessThanOrEqual(2);
    // the branches keep their own names
    const branch = g.node!.find((n) => n.opType === 'If')!.attribute!.find((a) => a.name === 'then_branch')!.g!;
    expect(branch.node).toBeDefined();
    expect(branch.node![0]!.input).toEqual(['/m/Mul_output_0']);
  });
});
