/**
 * safetensors: a header reader that trusts nothing, reads by offset, a streaming atomic
 * writer and a checkpoint view over sharded, single-file and directory layouts.
 */
export {
  MAX_HEADER_BYTES,
  TensorTable,
  elementCount,
  hasDtype,
  storedKey,
  headerLengthOf,
  parseSafetensorsHeader,
  type SafetensorsHeader,
  type TensorInfo,
} from './header';
export {
  SafetensorsReader,
  type TensorRange,
  readSafetensorsHeader,
  readSafetensorsHeaderSync,
  readTensorBytes,
  readTensorBytesSync,
} from './read';
export {
  SafetensorsWriter,
  backgroundDatasync,
  buildSafetensorsHeader,
  commitSealedFile,
  serializeSafetensors,
  writeSafetensors,
  type PlannedHeader,
  type TensorData,
  type TensorEntry,
} from './writer';
export { Checkpoint, INDEX_FILE, badShardName, type CheckpointLayout, type CheckpointTensor } from './checkpoint';
export { parseStrictJson, type StrictJson } from './strict-json';
