/**
 * A small graph-building DSL for ONNX: fresh value names, one call per node, constants as
 * `Constant` nodes (never initializers — a weight-free graph's only initializer-like data are
 * these few scalars and tables, and keeping them out of `initializer` means no tool mistakes
 * them for weights to resolve).
 *
 * The output is a plain object in the `toObject` shape the ONNX codec (`formats/onnx`) uses:
 * camelCase fields, int64 as number, bytes as Uint8Array, enums as numbers.
 */
import { onnxTypeOfName, type DtypeName, type ExportDtype } from '../../formats/dtype';
import { doubleToHalfBits, fromFloat64 } from '../../formats/float-convert';

/** A dimension: fixed size or a symbolic name. */
export type Dim = number | string;

/** One `AttributeProto` in toObject shape. */
export interface AttrObj {
  name: string;
  type: number;
  i?: number;
  f?: number;
  s?: Uint8Array;
  ints?: number[];
  floats?: number[];
  t?: TensorObj;
  /** A subgraph (If branches, Loop body). */
  g?: GraphObj;
}
/** One `TensorProto` in toObject shape (raw data only). */
export interface TensorObj {
  name?: string;
  dims: number[];
  dataType: number;
  rawData: Uint8Array;
}
/** One `NodeProto`. */
export interface NodeObj {
  name: string;
  opType: string;
  domain?: string;
  input: string[];
  output: string[];
  attribute: AttrObj[];
}
/** One `ValueInfoProto`. */
export interface ValueInfoObj {
  name: string;
  type: { tensorType: { elemType: number; shape: { dim: ({ dimValue: number } | { dimParam: string })[] } } };
}
/** One `GraphProto` (the model's graph or a subgraph). */
export interface GraphObj {
  name: string;
  node: NodeObj[];
  input: ValueInfoObj[];
  output: ValueInfoObj[];
  initializer: TensorObj[];
  valueInfo: ValueInfoObj[];
}
/** The `ModelProto` the builder produces. */
export interface ModelObj {
  irVersion: number;
  producerName: string;
  producerVersion: string;
  opsetImport: { domain: string; version: number }[];
  metadataProps: { key: string; value: string }[];
  graph: GraphObj;
}

/** Attribute values accepted by {@link GraphBuilder.op}. */
export type AttrValue = number | string | number[] | TensorObj | { float: number } | { floats: number[] } | { graph: GraphObj };

/**
 * The default opset: QEfficient exports at `ONNX_EXPORT_OPSET = 17` (`QEfficient/utils/constants.py`,
 * quic/efficient-transformers release/v1.22.8.0), the opset qaic-compile is known to take.
 */
export const OPSET = 17;
/** Opsets `--opset` accepts (17 … 21). */
export const OPSETS = [17, 18, 19, 20, 21] as const;
/** A supported opset. */
export type Opset = (typeof OPSETS)[number];
/** ONNX IR version of the default opset (onnx 1.12: IR 8 ↔ opset 17). */
export const IR_VERSION = 8;

/** The IR version onnx released with each opset (onnx/helper.py VERSION_TABLE: 1.12 → 8/17, 1.13 → 8/18, 1.14 → 9/19, 1.15 → 9/20, 1.16 → 10/21). */
export function irVersionFor(opset: number): number {
  return opset >= 21 ? 10 : opset >= 19 ? 9 : 8;
}

/** Ops whose `axes` moved from an attribute to an input at opset 18 (ReduceSum moved at 13). */
const REDUCE_AXES_INPUT_AT_18 = new Set([
  'ReduceMean',
  'ReduceMax',
  'ReduceMin',
  'ReduceProd',
  'ReduceL1',
  'ReduceL2',
  'ReduceLogSum',
  'ReduceLogSumExp',
  'ReduceSumSquare',
]);

const ATTR = { FLOAT: 1, INT: 2, STRING: 3, TENSOR: 4, GRAPH: 5, FLOATS: 6, INTS: 7 } as const;

function attr(name: string, v: AttrValue): AttrObj {
  if (typeof v === 'number') return { name, type: ATTR.INT, i: v };
  if (typeof v === 'string') return { name, type: ATTR.STRING, s: new TextEncoder().encode(v) };
  if (Array.isArray(v)) return { name, type: ATTR.INTS, ints: v };
  if ('float' in v) return { name, type: ATTR.FLOAT, f: v.float };
  if ('floats' in v) return { name, type: ATTR.FLOATS, floats: v.floats };
  if ('graph' in v) return { name, type: ATTR.GRAPH, g: v.graph };
  return { name, type: ATTR.TENSOR, t: v };
}

/** Encodes numbers as little-endian raw tensor bytes of `elem`. */
export function tensorOf(elem: DtypeName, dims: number[], values: ArrayLike<number>): TensorObj {
  const n = dims.reduce((a, b) => a * b, 1);
  if (values.length !== n) throw new Error(`tensorOf: ${values.length} values for dims [${dims}]`);
  let bytes: Uint8Array;
  switch (elem) {
    case 'float32':
      bytes = new Uint8Array(Float32Array.from(values).buffer);
      break;
    case 'int64':
      bytes = new Uint8Array(BigInt64Array.from(Array.from(values, (x) => BigInt(x))).buffer);
      break;
    case 'int32':
      bytes = new Uint8Array(Int32Array.from(values).buffer);
      break;
    case 'bool':
      bytes = Uint8Array.from(values, (x) => (x ? 1 : 0));
      break;
    // one RNE rounding from the double (as torch.tensor(x, dtype=float16) does)
    case 'float16':
      bytes = new Uint8Array(Uint16Array.from(values, doubleToHalfBits).buffer);
      break;
    // likewise torch.tensor(x, dtype=bfloat16): one RNE rounding from the double
    case 'bfloat16':
      bytes = fromFloat64(Float64Array.from(values), 'BF16');
      break;
    default:
      throw new Error(`tensorOf: the builder writes no ${elem} constants`);
  }
  return { dims, dataType: onnxTypeOfName(elem), rawData: bytes };
}

function valueInfo(name: string, elem: DtypeName, dims: Dim[]): ValueInfoObj {
  return {
    name,
    type: {
      tensorType: {
        elemType: onnxTypeOfName(elem),
        shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

/**
 * Accumulates nodes in topological order: every `op` call takes already-defined value names
 * and returns new ones, so the node list is valid by construction.
 */
export class GraphBuilder {
  /** @param opset the default-domain opset the graph declares; ops whose form depends on it go through {@link reduce}. */
  constructor(readonly opset: number = OPSET) {}

  readonly nodes: NodeObj[] = [];
  readonly inputs: ValueInfoObj[] = [];
  readonly outputs: ValueInfoObj[] = [];
  private readonly counters = new Map<string, number>();
  private readonly constCache = new Map<string, string>();
  /** Constants made so far (names stay unique when a subgraph's cache is set aside). */
  private constCount = 0;
  /** Subgraphs made so far (each names its values under its own scope). */
  private subgraphs = 0;
  private scope = '';

  /** Runs `fn` with node and value names prefixed by `scope` (e.g. `/layers.3/attn`). */
  within<T>(scope: string, fn: () => T): T {
    const prev = this.scope;
    this.scope = `${prev}/${scope}`;
    try {
      return fn();
    } finally {
      this.scope = prev;
    }
  }

  /** A fresh, unique value name based on `hint` within the current scope. */
  fresh(hint: string): string {
    const base = `${this.scope}/${hint}`;
    const n = this.counters.get(base) ?? 0;
    this.counters.set(base, n + 1);
    return n === 0 ? base : `${base}_${n}`;
  }

  /** Declares a graph input; returns its name. */
  input(name: string, elem: DtypeName, dims: Dim[]): string {
    this.inputs.push(valueInfo(name, elem, dims));
    return name;
  }

  /** Declares `value` as a graph output named `name` (an Identity makes the name exact). */
  output(value: string, name: string, elem: DtypeName, dims: Dim[]): void {
    if (value !== name) this.nodes.push({ name: `${name}_out`, opType: 'Identity', input: [value], output: [name], attribute: [] });
    this.outputs.push(valueInfo(name, elem, dims));
  }

  /** Adds one node with `nOut` outputs; returns the output names. */
  opN(opType: string, inputs: string[], attrs: Record<string, AttrValue | undefined> = {}, nOut = 1): string[] {
    const out = Array.from({ length: nOut }, (_, k) => this.fresh(nOut === 1 ? opType : `${opType}_o${k}`));
    const attribute: AttrObj[] = [];
    for (const [k, v] of Object.entries(attrs)) if (v !== undefined) attribute.push(attr(k, v));
    this.nodes.push({ name: out[0]!, opType, input: inputs, output: out, attribute });
    return out;
  }

  /** Custom-domain opsets the graph uses (imported at version 1 by {@link build}). */
  private readonly domains = new Set<string>();
  private readonly valueInfos: ValueInfoObj[] = [];

  /**
   * A node of a custom domain (`com.microsoft`): its opset is imported, and its output's type is
   * declared as value_info, so ONNX's shape inference (which has no schema for it) still types
   * the nodes after it.
   */
  custom(
    domain: string,
    opType: string,
    inputs: string[],
    attrs: Record<string, AttrValue | undefined>,
    out: { elem: DtypeName; dims: Dim[] },
  ): string {
    const y = this.op(opType, inputs, attrs);
    this.nodes[this.nodes.length - 1]!.domain = domain;
    this.domains.add(domain);
    this.valueInfos.push(valueInfo(y, out.elem, out.dims));
    return y;
  }

  /** Adds one single-output node; returns its output name. */
  op(opType: string, inputs: string[], attrs: Record<string, AttrValue | undefined> = {}): string {
    return this.opN(opType, inputs, attrs, 1)[0]!;
  }

  /**
   * A `Reduce*` over constant `axes` in the form the opset wants: `axes` as an input for
   * ReduceSum (opset 13+) and for every other reduction from opset 18, an attribute below.
   */
  reduce(opType: string, x: string, axes: number[], keepdims: 0 | 1): string {
    const asInput = opType === 'ReduceSum' || (REDUCE_AXES_INPUT_AT_18.has(opType) && this.opset >= 18);
    if (!opType.startsWith('Reduce')) throw new Error(`reduce: ${opType} is not a reduction`);
    return asInput ? this.op(opType, [x, this.ints(axes, 'axes')], { keepdims }) : this.op(opType, [x], { axes, keepdims });
  }

  /**
   * A subgraph (If branch, Loop body) built by `fn` with this builder: its nodes are taken out
   * of the main list, and constants made inside stay inside (a fresh constant cache), while
   * values of the enclosing graph may be named freely (ONNX outer-scope references).
   * `inputs` are declared as the subgraph's formal inputs; `fn` returns the outputs.
   */
  subgraph(
    name: string,
    inputs: { name: string; elem: DtypeName; dims: Dim[] }[],
    fn: () => { value: string; name: string; elem: DtypeName; dims: Dim[] }[],
  ): GraphObj {
    const start = this.nodes.length;
    const consts = new Map(this.constCache);
    this.constCache.clear();
    // a subgraph's values get a short scope of their own (`/g<n>`): compile keeps the names subgraphs use
    const scope = this.scope;
    this.scope = `/g${this.subgraphs++}`;
    try {
      const outs = fn();
      const node = this.nodes.splice(start);
      // an Identity gives each output its exact name (the value may be an input or an outer value)
      const output = outs.map((o) => {
        if (o.value !== o.name) node.push({ name: `${o.name}_out`, opType: 'Identity', input: [o.value], output: [o.name], attribute: [] });
        return valueInfo(o.name, o.elem, o.dims);
      });
      return { name, node, input: inputs.map((i) => valueInfo(i.name, i.elem, i.dims)), output, initializer: [], valueInfo: [] };
    } finally {
      this.scope = scope;
      this.constCache.clear();
      for (const [k, v] of consts) this.constCache.set(k, v);
    }
  }

  /** A `Constant` node holding `values` (deduplicated across the graph). */
  constant(elem: DtypeName, dims: number[], values: ArrayLike<number>, hint = 'const'): string {
    const key = `${elem}|${dims.join(',')}|${Array.from(values).join(',')}`;
    const hit = this.constCache.get(key);
    if (hit) return hit;
    const name = `/const/${hint}_${this.constCount++}`;
    this.nodes.push({ name, opType: 'Constant', input: [], output: [name], attribute: [attr('value', tensorOf(elem, dims, values))] });
    this.constCache.set(key, name);
    return name;
  }

  /** int64 vector constant (shapes, axes, indices). */
  ints(values: number[], hint = 'ints'): string {
    return this.constant('int64', [values.length], values, hint);
  }

  /** int64 scalar constant. */
  int(value: number, hint = 'int'): string {
    return this.constant('int64', [], [value], hint);
  }

  /** Scalar constant of a float type. */
  scalar(elem: ExportDtype, value: number, hint = 'scalar'): string {
    return this.constant(elem, [], [value], hint);
  }

  /** The finished model. */
  build(name: string, metadata: Record<string, string>): ModelObj {
    return {
      irVersion: irVersionFor(this.opset),
      producerName: 'weight-spec',
      producerVersion: '0.1.0',
      opsetImport: [{ domain: '', version: this.opset }, ...[...this.domains].sort().map((domain) => ({ domain, version: 1 }))],
      metadataProps: Object.keys(metadata)
        .sort()
        .map((key) => ({ key, value: metadata[key]! })),
      graph: { name, node: this.nodes, input: this.inputs, output: this.outputs, initializer: [], valueInfo: this.valueInfos },
    };
  }
}
