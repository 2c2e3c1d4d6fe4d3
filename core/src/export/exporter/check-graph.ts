/**
 * Structural checks of a built graph, the subset of `onnx.checker` the project can run without
 * Python: opset imports present, every node input defined before use, every value defined
 * once, graph outputs produced, declared shapes well-formed, Constant payloads sized to their
 * dims, and each state input (graph-interface.ts: `past_key.{i}`, `compressed_kv.{i}`,
 * `conv_state.{i}`, …) carried by a `_RetainedState` output declared exactly like it.
 */
import { OPSETS, type ModelObj, type ValueInfoObj } from '../blocks/builder';
import { isStateInput, RETAINED } from '../../artifacts/graph-interface';

/** One structural finding. */
export interface GraphProblem {
  code: 'opset' | 'undefined-input' | 'redefined' | 'output-undefined' | 'shape' | 'constant' | 'retained-mismatch';
  message: string;
}

const ELEM_SIZE: Record<number, number> = { 1: 4, 6: 4, 7: 8, 9: 1, 10: 2 };

function dimsOf(v: ValueInfoObj): (number | string)[] {
  return v.type.tensorType.shape.dim.map((d) => ('dimValue' in d ? d.dimValue : d.dimParam));
}

/** Returns every structural problem of `m` (empty when the graph is sound). */
export function checkGraph(m: ModelObj): GraphProblem[] {
  const problems: GraphProblem[] = [];
  const def = m.opsetImport.find((o) => o.domain === '');
  if (!def || !(OPSETS as readonly number[]).includes(def.version)) {
    problems.push({
      code: 'opset',
      message: `default-domain opset import ${def?.version ?? 'missing'} (need one of ${OPSETS.join(', ')})`,
    });
  }
  const defined = new Set<string>();
  const define = (name: string, where: string) => {
    if (defined.has(name)) problems.push({ code: 'redefined', message: `${name} is defined twice (${where})` });
    defined.add(name);
  };
  for (const v of m.graph.input) {
    define(v.name, 'graph input');
    const dims = dimsOf(v);
    if (!(v.type.tensorType.elemType in ELEM_SIZE))
      problems.push({ code: 'shape', message: `${v.name}: unexpected element type ${v.type.tensorType.elemType}` });
    for (const d of dims) {
      if (typeof d === 'number' ? !(Number.isInteger(d) && d > 0) : d.length === 0)
        problems.push({ code: 'shape', message: `${v.name}: bad dim ${String(d)}` });
    }
  }
  for (const t of m.graph.initializer) define(t.name ?? '', 'initializer');
  for (const n of m.graph.node) {
    for (const i of n.input) {
      if (i !== '' && !defined.has(i))
        problems.push({ code: 'undefined-input', message: `node ${n.name} (${n.opType}) uses ${i} before it is defined` });
    }
    for (const o of n.output) define(o, `node ${n.name}`);
    if (n.opType === 'Constant') {
      const t = n.attribute.find((a) => a.name === 'value')?.t;
      const numel = t ? t.dims.reduce((a, b) => a * b, 1) : -1;
      if (!t || t.rawData.length !== numel * (ELEM_SIZE[t.dataType] ?? NaN)) {
        problems.push({ code: 'constant', message: `Constant ${n.name}: payload does not match its dims` });
      }
    }
  }
  const inputs = new Map(m.graph.input.map((v) => [v.name, v]));
  for (const o of m.graph.output) {
    if (!defined.has(o.name)) problems.push({ code: 'output-undefined', message: `graph output ${o.name} is never produced` });
    const state = o.name.endsWith(RETAINED) ? o.name.slice(0, -RETAINED.length) : undefined;
    if (state !== undefined && isStateInput(state)) {
      const p = inputs.get(state);
      const same =
        p && p.type.tensorType.elemType === o.type.tensorType.elemType && JSON.stringify(dimsOf(p)) === JSON.stringify(dimsOf(o));
      if (!same) problems.push({ code: 'retained-mismatch', message: `${o.name} is not declared like input ${state}` });
    }
  }
  const outputs = new Set(m.graph.output.map((o) => o.name));
  for (const i of m.graph.input) {
    if (isStateInput(i.name) && !outputs.has(i.name + RETAINED))
      problems.push({ code: 'retained-mismatch', message: `state input ${i.name} has no ${i.name + RETAINED} output` });
  }
  return problems;
}
