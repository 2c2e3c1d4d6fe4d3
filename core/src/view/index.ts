/**
 * Page data of the editor's read-only viewers (safetensors checkpoints, ONNX graphs), built
 * from headers only. The extension posts it to a webview; `npm run bench` times it.
 */
export * from './types';
export { buildCheckpointPage, checkpointOf, storageOrder, type CheckpointPageOptions } from './checkpoint-page';
export { linkSpecs, specInputKeyRange, type SpecText } from './spec-links';
export { buildOnnxPage, groupWeights, METADATA_CLIP, type OnnxPageOptions } from './onnx-page';
export { indexGraph, nodeNameLayer, readGraphNodes, type GraphIndex, type RawNode } from './onnx-graph';
export { buildViewerPage, type ViewerResult } from './page';
export { valueRuns, type ValueRun } from './value-runs';
export { onnxLinks } from './onnx-links';
export { compileTensorFilter, FILTER_PLACEHOLDER, type FilterFields, type TensorFilter } from './tensor-filter';
export { middleEllipsis, shardLabels } from './table-text';
export { buildGraphModel, graphModelOf, siblingSpec, weightSources } from './graph-model';
export { neighbors, weightLabel, type GraphModel, type GxNode, type GxSection, type GxValue, type WeightSource } from './graph-data';
export { inferShapes, type InferredValue } from './shape-infer';
export { GraphSearch, type SearchHit } from './graph-search';
export { graphSvg, xmlEscape, LIGHT_COLORS, type GraphColors, type GraphSvgOptions } from './graph-svg';
export { graphImageBytes, saveGraphImage, type GraphImageFormat } from './graph-image';
export {
  tensorStats,
  openTensor,
  closeTensor,
  valuesShape,
  forEachChunk,
  statsLines,
  formatValue,
  tensorFileOf,
  STATS_CHUNK_BYTES,
  type TensorStats,
  type TensorStatsOptions,
} from './tensor-stats';
export { exportNpy, npyHeader } from './tensor-npy';
