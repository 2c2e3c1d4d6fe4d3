/**
 * Spec diagnostics against the real files, shared by `weight-spec check` and the language
 * server. See check-spec.ts for the passes and docs/MODULES.md for the stable codes.
 */
export { checkSpec } from './check-spec';
export { PREPARE_HINT, type CheckOptions } from './context';
export { HeaderCache, defaultHeaderCache } from './header-cache';
export { closestNames, boundedEditDistance, commonSuffixSegments, KeyIndex, keyIndexOf } from './suggest';
export { findCompanionOnnx, RUNTIME_INPUT } from './check-onnx';
export { dtypeFromName } from '../formats/dtype';
export { PREPARED_MANIFEST, looksPrepared } from './prepared';
export { checkParsedSpec, type CheckRun } from './check-spec';
export { SpecCheckSession, type SessionOptions } from './session';
export { checkQuantization, describeQuantizedKey, quantFactsOf, type QuantFacts } from './quantization';
export { describePreparedOrigin } from './prepared-origin';
export { describePlannedOrigin } from './planned';
