/**
 * `.bin` (PyTorch zip + pickle) checkpoints: an allow-listed unpickler that executes nothing,
 * a reader of tensor metadata and bytes, and the converter to safetensors.
 */
export { openTorchBin, gatherStrided, type TorchBin } from './torch-bin';
export {
  allowedGlobal,
  decodeStateDict,
  validateTensor,
  STORAGE_DTYPES,
  BIN_DTYPE_SIZE,
  type BinTensor,
  type DecodedStateDict,
} from './state-dict';
export { unpickle, type UnpickleHooks, type UnpickleLimits } from './unpickler';
export { ZipReader, type ZipEntry } from './zip';
export * from './values';
export { convertBinCheckpoint, safetensorsNameFor, SIDECARS, type ConvertOptions, type ConvertResult } from './convert';
