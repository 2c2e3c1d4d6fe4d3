/**
 * The colors of the graph explorer's operator boxes: op types grouped as Netron groups them
 * (layers, activations, normalizations, tensor reshaping, the rest). The canvas, the SVG export
 * and the legend read the same table.
 */

/** Op categories the explorer colors (and its legend lists), as Netron groups them. */
export const OP_CATEGORIES = ['layer', 'activation', 'normalization', 'tensor', 'other'] as const;
/** One of {@link OP_CATEGORIES}. */
export type OpCategory = (typeof OP_CATEGORIES)[number];

const CATEGORY: Record<string, OpCategory> = {};
for (const [c, ops] of [
  ['layer', 'Gemm MatMul MatMulInteger Conv ConvTranspose Attention MultiHeadAttention GroupQueryAttention Einsum'],
  ['activation', 'Sigmoid Softmax LogSoftmax Relu Gelu FastGelu Tanh Silu Erf Elu LeakyRelu HardSigmoid Softplus'],
  ['normalization', 'LayerNormalization SimplifiedLayerNormalization RMSNormalization BatchNormalization ReduceMean Sqrt Reciprocal'],
  [
    'tensor',
    'Reshape Transpose Concat Split Slice Gather GatherND GatherElements Unsqueeze Squeeze Expand Tile Shape ScatterND ScatterElements Range Identity Cast Where Flatten Pad TopK ArgMax',
  ],
] as const)
  for (const op of ops.split(' ')) CATEGORY[op] = c;

/** The category of op type `op` (`other` for arithmetic and the rest). */
export function opCategory(op: string): OpCategory {
  return CATEGORY[op] ?? 'other';
}
