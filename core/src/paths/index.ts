/**
 * Path policy — the one module every reader and writer uses.
 *
 * Reads: {@link resolveReadPath} (spec `files[].path`, ONNX external-data `location`).
 * Writes: {@link createOutputGuard} for an output directory, {@link atomicWriteFile},
 * {@link atomicReplaceDir} and friends for crash-safe replacement.
 */
export { PathPolicyError, printable, type PathPolicyCode } from './policy-error';
export {
  MAX_PATH_BYTES,
  MAX_SEGMENT_BYTES,
  checkReadPathText,
  effectiveRoots,
  isInside,
  realPathOf,
  resolveReadPath,
  tryResolveReadPath,
  validatePathText,
  type ReadPath,
} from './read-policy';
export {
  assertRegularFile,
  assertWritableDir,
  MAX_INPUT_BYTES,
  MAX_JSON_BYTES,
  MAX_REF_BYTES,
  openRegularFile,
  openRegularFileSync,
  pseudoFsOf,
  readInputFile,
  readRegularFile,
  readJsonText,
  readJsonTextSync,
  readRegularFileSync,
  specialKind,
} from './file-kind';
export { confineFilePath, judgeFilePath, trustedFolders, type FilePathVerdict } from './trust';
export { checkOutputFile, createOutputGuard, writeOutputFile, type OutputGuard, type OutputGuardOptions } from './output-guard';
export {
  TEMP_NAME_RE,
  atomicReplaceDir,
  atomicWriteFile,
  atomicWriteFileSync,
  processAlive,
  commitTempFile,
  fsyncDir,
  fsyncDirSync,
  makeTempSiblingDir,
  removeStaleTemps,
  tempPathFor,
  writeError,
} from './atomic';
export { abandonWork, beginWork, failpoint, scratchDir, setWorkNotices, type ScratchDir, type WorkScope } from './interrupt';
