/**
 * prepare: a planned, memory-bounded checkpoint pipeline. {@link planPrepare} (headers
 * only) says which keys, shapes and files prepare will write — export uses it before prepare
 * runs; {@link runPrepare} executes the plan in worker threads and finalizes atomically.
 */
export { BASE_SHARD_BYTES, planPrepare } from './planner';
export { runPrepare, type PrepareResult, type RunPrepareOptions } from './run-prepare';
export {
  availableMemory,
  defaultBudgetBytes,
  defaultWorkerPath,
  runTasks,
  type ExecutorOptions,
  type ExecutorResult,
  type PrepareProgress,
} from './executor';
export { executeTask, type TaskStats } from './run-task';
export {
  MANIFEST_FILE,
  MANIFEST_VERSION,
  SENTINEL_FILE,
  isPreparedUpToDate,
  isQeffPrepared,
  parsePreparedManifest,
  preparedStatus,
  readPreparedManifest,
  type PreparedManifest,
  type PreparedStatus,
} from './manifest';
export { preparedForCompile, preparedMismatch, type PreparedRead } from './manifest';
export { planFingerprint, shortHash, PREPARE_FORMAT_VERSION } from './fingerprint';
export { dequantMxfp4, makeConverter, FP4_VALUES } from './kernels';
export type { OutputTensor, PlannedTensor, PrepareOptions, PreparePlan, SlicePlan, SourceTensor, Task, TensorRef } from './types';
export { quantSchemeOf, quantMethodOf, describeScheme, isInt4, SUPPORTED_QUANTIZATION, type QuantScheme } from './quant-config';
export { planDequant, weightOfScaleKey, type DequantPlan } from './transforms/fp8';
export { dequantFp8, fp8Values } from './fp8-kernel';
export {
  assignShards,
  finalizeShards,
  parseShard,
  runShard,
  stagingDirOf,
  taskFingerprint,
  type FinalizeResult,
  type ShardRecord,
  type ShardResult,
  type ShardSpec,
  type TaskRecord,
} from './shards';
