/**
 * Compile state of a spec's export directory for the code lens and the `weightSpec/specState`
 * request: core's {@link compileStatus} (the same answer `weight-spec compile` uses to skip),
 * without the record itself, which the client does not need.
 */
import path from 'node:path';
import { compileStatus } from '../../core/src/compile/status';
import type { CompileInfo } from '../../core/src/protocol';

/** The compile state of the export directory holding `specFile`. Never throws. */
export function compileStateOf(specFile: string): CompileInfo {
  const { record: _record, ...info } = compileStatus(path.dirname(specFile));
  return info;
}
