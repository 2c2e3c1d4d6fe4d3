/**
 * QEfficient's multi-device partition configs (`-mdp-load-partition-config`), as data: the
 * template tensor-slicing config and the layer-balanced pipeline config, from
 * `QEfficient/compile/mdp_generator.py` (quic/efficient-transformers main ebf55e81):
 * `generate_mdp_partition_config`, `generate_disagg_mdp_partition_config` (the ONNX strategy,
 * QEfficient's default), `_layer_partition_bounds`, `_get_layer_num` and
 * `_get_compiler_folded_nodes`. The qaic planner (compile/qaic-command.ts) writes them with
 * `create_json`'s layout; no I/O here.
 */

/** One device of a partition. */
export interface MdpDevice {
  deviceId: number;
  numCores: number;
}

/** A partition config: `connections` (one p2p group of every device) and `partitions`. */
export interface MdpConfig {
  connections: { devices: number[]; type: 'p2p' }[];
  partitions: { name: string; nodeList?: string[]; devices: MdpDevice[] }[];
}

/** A graph node as the pipeline config reads it. */
export interface MdpNode {
  name: string;
  opType: string;
  input: readonly string[];
  output: readonly string[];
}

/**
 * `generate_mdp_partition_config(num_devices, num_cores)`: every device in one `Partition0`
 * (the compiler slices tensors across them), one p2p connection over devices 0…N−1.
 */
export function mdpTemplateConfig(numDevices: number, numCores: number): MdpConfig {
  const ids = Array.from({ length: numDevices }, (_, d) => d);
  return {
    connections: [{ devices: ids, type: 'p2p' }],
    partitions: [{ name: 'Partition0', devices: ids.map((d) => ({ deviceId: d, numCores })) }],
  };
}

/**
 * `_layer_partition_bounds`: the exclusive upper layer bound of each partition but the last.
 * The remainder goes to the middle partitions first (from the centre outwards), then one to the
 * first; the last (final norm, LM head) keeps the base count; with two partitions the first
 * takes the whole remainder.
 */
export function layerPartitionBounds(numLayers: number, numPartitions: number): number[] {
  const base = Math.floor(numLayers / numPartitions);
  const remainder = numLayers % numPartitions;
  const sizes = Array<number>(numPartitions).fill(base);
  if (remainder > 0 && numPartitions >= 2) {
    if (numPartitions === 2) sizes[0]! += remainder;
    else {
      const middleFill = Math.min(remainder, numPartitions - 2);
      const firstFill = remainder - middleFill;
      const centre = Math.floor((1 + numPartitions - 2) / 2);
      let left = centre;
      let right = centre + 1;
      let filled = 0;
      while (filled < middleFill) {
        if (left >= 1) {
          sizes[left]! += 1;
          left -= 1;
          filled += 1;
        }
        if (filled < middleFill && right <= numPartitions - 2) {
          sizes[right]! += 1;
          right += 1;
          filled += 1;
        }
      }
      // as the source has it: one more layer, whatever firstFill is
      if (firstFill > 0) sizes[0]! += 1;
    }
  }
  const bounds: number[] = [];
  let sum = 0;
  for (const s of sizes.slice(0, -1)) bounds.push((sum += s));
  return bounds;
}

/** `_get_layer_num`: the layer of a node named `…/layers.N/…` (also `h.N`, `layer_N`), else undefined. */
export function layerOfNodeName(name: string): number | undefined {
  for (const part of name.split('/')) {
    for (const prefix of ['layers.', 'h.', 'layer_']) {
      if (part.startsWith(prefix) && /^\d+$/.test(part.slice(prefix.length))) return Number(part.slice(prefix.length));
    }
  }
  return undefined;
}

/** Nodes the compiler never folds (`_get_compiler_folded_nodes`' `_NEVER_FOLD`). */
const NEVER_FOLD = new Set(['Loop', 'Const', 'Identity', 'If', 'DequantizeLinear']);

/**
 * `_get_compiler_folded_nodes`: named nodes whose every input is a compile-time constant
 * (an initializer, a Constant's output, or a folded node's output), to a fixed point.
 */
export function compilerFoldedNodes(nodes: readonly MdpNode[], initializers: readonly string[]): Set<string> {
  const consts = new Set(initializers);
  for (const n of nodes) if (n.opType === 'Constant') for (const o of n.output) if (o) consts.add(o);
  const folded = new Set<string>();
  for (let changed = true; changed;) {
    changed = false;
    for (const n of nodes) {
      if (!n.name || folded.has(n.name) || NEVER_FOLD.has(n.opType) || n.input.length === 0) continue;
      if (n.input.every((i) => !i || consts.has(i))) {
        folded.add(n.name);
        for (const o of n.output) if (o) consts.add(o);
        changed = true;
      }
    }
  }
  return folded;
}

/** `bisect.bisect_right(bounds, x)`. */
function bisectRight(bounds: readonly number[], x: number): number {
  let i = 0;
  while (i < bounds.length && bounds[i]! <= x) i++;
  return i;
}

/**
 * `generate_disagg_mdp_partition_config` (ONNX strategy) over a graph without local functions:
 * each named, unfolded node in graph order goes to the partition of its layer; a node outside the
 * layers follows the last layer seen (partition 0 before the first). `num_devices //
 * num_partitions` devices per partition, in order.
 */
export function mdpPipelineConfig(
  nodes: readonly MdpNode[],
  initializers: readonly string[],
  o: { numDevices: number; numPartitions: number; numLayers: number; numCores: number },
): MdpConfig {
  if (o.numPartitions <= 0) throw new RangeError(`Invalid number of partitions: ${o.numPartitions}`);
  if (o.numPartitions > o.numDevices)
    throw new RangeError(
      `Num of partitions should be <= number of devices. Found ${o.numPartitions} partitions and ${o.numDevices} devices`,
    );
  const bounds = layerPartitionBounds(o.numLayers, o.numPartitions);
  const folded = compilerFoldedNodes(nodes, initializers);
  const lists: string[][] = Array.from({ length: o.numPartitions }, () => []);
  let current = 0;
  let seenLayer = false;
  for (const n of nodes) {
    if (!n.name || folded.has(n.name)) continue;
    const layer = layerOfNodeName(n.name);
    let at: number;
    if (layer !== undefined) {
      seenLayer = true;
      at = current = bisectRight(bounds, layer);
    } else at = seenLayer ? current : 0;
    lists[at]!.push(n.name);
  }
  const ids = Array.from({ length: o.numDevices }, (_, d) => d);
  const per = Math.floor(o.numDevices / o.numPartitions);
  return {
    connections: [{ devices: ids, type: 'p2p' }],
    partitions: lists.map((nodeList, i) => ({
      name: `Partition${i}`,
      nodeList,
      devices: ids.slice(i * per, (i + 1) * per).map((d) => ({ deviceId: d, numCores: o.numCores })),
    })),
  };
}
