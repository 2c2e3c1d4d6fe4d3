/**
 * `run`: opens the latest compile of an export directory (from its compile.json) or a bound
 * `.onnx` given directly, and hands back a {@link Runner}.
 */
import fs from 'node:fs';
import path from 'node:path';
import { FormatError, PipelineError } from '../errors';
import { parseWireModel } from '../formats/onnx/wire-model';
import { COMPILE_RECORD } from '../artifacts/compile-record';
import { compileStatus, type CompileStatus } from '../compile/status';
import { gatheredRows } from './vocab';
import { createRunner, type RunnerOptions } from './runner';
import type { Runner } from './runner-generate';
import { readRegularFileSync } from '../paths';

export { argmax, logitRows, type RunnerOptions } from './runner';
export { checkTokenIds, type GenerateStats, type OnToken, type Runner } from './runner-generate';
export { loadOrt } from '../ort/loader';
export { checkSampling, GREEDY, needsSampler, PenaltyBuffers, sampleToken, uniformStream, type SamplingParams } from './sampling';
export { pickBucket, servingFeatures, servingSummary, type ServingFeatures } from './serving';

/**
 * The runnable ONNX for a target: a `.onnx` file itself, or the ort artifact recorded in
 * `<dir>/compile.json` — with that directory's compile status, so a caller can say when the
 * artifact no longer matches its inputs.
 */
export function resolveRunnable(target: string): { model: string; status?: CompileStatus } {
  const abs = path.resolve(target);
  let st: fs.Stats;
  try {
    st = fs.statSync(abs);
  } catch {
    throw new FormatError(target, 'no such file or directory');
  }
  if (st.isFile()) {
    if (!abs.endsWith('.onnx'))
      throw new FormatError(target, 'is a file but not an .onnx model; give the export directory or the compiled .onnx');
    return { model: abs };
  }
  const status = compileStatus(abs);
  const rec = status.record;
  if (!rec && fs.existsSync(path.join(abs, COMPILE_RECORD))) {
    // Unreadable, or naming an artifact compile did not make (artifacts/compile-artifact.ts): never loaded.
    throw new PipelineError(
      `${path.join(abs, COMPILE_RECORD)}: not a record of a weight-spec compile here (run weight-spec compile ${target} again)`,
    );
  }
  if (!rec) throw new PipelineError(`${target}: no ${COMPILE_RECORD} (run weight-spec compile ${target} first)`);
  if (rec.backend !== 'ort' || !rec.artifacts.model) {
    throw new PipelineError(
      `${path.join(abs, COMPILE_RECORD)}: the latest compile used the ${rec.backend} backend; only ort artifacts run here (compile with --backend ort)`,
    );
  }
  if (!fs.existsSync(rec.artifacts.model)) {
    throw new PipelineError(`${rec.artifacts.model}: compiled model is missing (run weight-spec compile ${target} again)`);
  }
  return { model: rec.artifacts.model, status };
}

/** Opens a runner on an export directory (its latest ort compile) or a compiled `.onnx`. */
export async function openRunner(compiledOrExportDir: string, opts: RunnerOptions = {}): Promise<Runner> {
  const { model } = resolveRunnable(compiledOrExportDir);
  const m = parseWireModel(readRegularFileSync(model), model);
  return createRunner(model, m.inputs, m.outputs, { vocab: gatheredRows(m, 'input_ids', model), ...opts }, m.metadata);
}

/** The vocabulary size an id must be below in `model` (a weight-free export or a bound model), if the graph tells. */
export function vocabOf(model: string): number | undefined {
  return gatheredRows(parseWireModel(readRegularFileSync(model), model), 'input_ids', model);
}
