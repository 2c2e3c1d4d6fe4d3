/**
 * Compile state of a spec's export directory for the code lens and the status bar: read
 * `<export dir>/compile.json` as `weight-spec compile` writes it and compare its recorded
 * fingerprint parts (graph, spec, prepared) with the current files — the same parts compile
 * uses to decide whether it can skip. Cached by the stamps of the files involved.
 */
import fs from 'node:fs';
import path from 'node:path';
import { computeFingerprint } from '../../core/src/compile/fingerprint';
import { locatePrepared, readExportInputs } from '../../core/src/compile/locate';
import { COMPILE_RECORD, readCompileRecord } from '../../core/src/compile/record';
import type { CompileInfo } from '../../core/src/protocol';

const cache = new Map<string, { stamp: string; info: CompileInfo }>();

function stampOf(files: (string | undefined)[]): string {
  return files
    .map((f) => {
      if (!f) return '-';
      try {
        const st = fs.statSync(f);
        return `${st.size}:${st.mtimeMs}:${st.ino}`;
      } catch {
        return 'x';
      }
    })
    .join('|');
}

/** The compile state of the export directory holding `specFile`. Never throws. */
export function compileStateOf(specFile: string): CompileInfo {
  const dir = path.dirname(specFile);
  const rec = readCompileRecord(dir);
  if (!rec) return { state: 'never-compiled' };
  const base: CompileInfo = {
    state: 'stale',
    backend: rec.backend,
    ...(rec.artifacts.model ?? rec.artifacts.qpc ? { artifact: rec.artifacts.model ?? rec.artifacts.qpc } : {}),
    createdAt: rec.createdAt,
  };
  try {
    const inp = readExportInputs(dir, true);
    if (!inp) return { ...base, changed: ['graph'] };
    const stamp = stampOf([path.join(dir, COMPILE_RECORD), inp.onnxPath, inp.specPath, base.artifact, rec.prepared && path.join(rec.prepared, '.checkpoint_prepared.json')]);
    const hit = cache.get(dir);
    if (hit && hit.stamp === stamp) return hit.info;
    const loc = locatePrepared(inp, rec.prepared);
    const fp = computeFingerprint(inp, loc, rec.backend, null);
    const changed = (['graph', 'spec', 'prepared'] as const).filter((k) => rec.inputs?.[k] !== fp.parts[k]);
    const artifactGone = base.artifact !== undefined && !fs.existsSync(base.artifact);
    if (artifactGone) changed.push('artifact' as never);
    const info: CompileInfo = changed.length === 0 ? { ...base, state: 'up-to-date' } : { ...base, changed };
    cache.set(dir, { stamp, info });
    return info;
  } catch {
    return base; // unreadable inputs: what was compiled no longer matches
  }
}
