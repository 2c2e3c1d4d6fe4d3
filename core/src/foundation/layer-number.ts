/**
 * The layer a module or tensor name belongs to (`…layers.12…` → 12; BERT's `encoder.layer.12…`
 * too): what prepare's MoE grouping, the ONNX viewer's layer groups and the extension's tree
 * share. Foundation: imports nothing of ours.
 */

/** Layer number of a module path (`…layers.12…`, `…layer.12…` → 12), or undefined. */
export function layerNumberOf(module: string): number | undefined {
  const m = /(?:^|\.)(?:layers|layer|h|blocks|block)\.(\d+)(?:\.|$)/.exec(module);
  return m ? Number(m[1]) : undefined;
}
