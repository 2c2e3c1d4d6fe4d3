/**
 * config.json → ONNX causal-LM graph (weight-free, KV cache, QEfficient interface).
 * `archFromConfig` validates a config per model_type; `buildCausalLM` builds the graph;
 * `encodeBuiltModel` serializes it.
 */
export { archFromConfig, type ArchOptions } from '../families/arch-from-config';
export { buildCausalLM, type BuiltGraph, type GraphOptions, type Phase } from './decoder';
export { encodeBuiltModel } from './encode';
export { type ArchSpec } from '../blocks/arch';
export { weightInputs, type WeightInput } from '../blocks/weight-inputs';
export { SUPPORTED_MODEL_TYPES, type ModelType } from '../families/registry';
export { GraphBuilder, OPSET, IR_VERSION, type ModelObj, type NodeObj, type ValueInfoObj } from '../blocks/builder';
export { checkGraph, type GraphProblem } from './check-graph';
