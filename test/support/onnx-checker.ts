/**
 * ONNX's own validator as an independent judge of the graphs this project writes:
 * `onnx.checker.check_model(path, full_check=True)` and
 * `onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)`, run by
 * Debian's `python3-onnx` (1.12, opset ≤ 17) under `/usr/bin/python3`. Where that module is
 * absent (a user's machine) the tests using {@link describeOnnxChecker} are skipped with a
 * printed notice; under CI=true its absence is a failure (.ci/run installs python3-onnx).
 *
 * Custom domains: onnx 1.12 has no schema for `com.microsoft` ops (MatMulNBits of a kept int4
 * graph). check_model requires the domain's opset import and skips the node's own checks; shape
 * inference leaves its output untyped unless the graph declares it as value_info (the builder
 * does, so the nodes after it are still typed). The op itself is checked by onnxruntime.
 *
 * Use: `describeOnnxChecker('…', () => { it('…', () => expectOnnxValid([file])) })`.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect } from 'vitest';

/** The interpreter that has Debian's python3-onnx (WEIGHT_SPEC_PYTHON overrides). */
export const PYTHON = process.env.WEIGHT_SPEC_PYTHON ?? '/usr/bin/python3';

// Each argument is a model path; prints one JSON line per model: {file, ok, error?}.
// load_external_data=False: the compiled artifact's external data points into safetensors
// files beside it; check_model(path) itself checks that those locations exist.
const SCRIPT = `
import json, sys
import onnx
from onnx import checker, shape_inference
for f in sys.argv[1:]:
    try:
        m = onnx.load(f, load_external_data=False)
        checker.check_model(f, full_check=True)
        shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
        print(json.dumps({"file": f, "ok": True, "opset": [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")]}))
    except Exception as e:
        print(json.dumps({"file": f, "ok": False, "error": (type(e).__name__ + ": " + str(e))[:2000]}))
`;

let available: boolean | undefined;
/** True when `PYTHON` can import onnx. Under CI=true its absence throws. */
export function haveOnnxChecker(): boolean {
  if (available === undefined) {
    const r = existsSync(PYTHON)
      ? spawnSync(PYTHON, ['-c', 'import onnx, onnx.checker, onnx.shape_inference'], { encoding: 'utf8' })
      : undefined;
    available = r?.status === 0;
  }
  if (!available && process.env.CI === 'true') {
    throw new Error(`${PYTHON} cannot import onnx (CI=true requires Debian's python3-onnx: apt-get install python3-onnx)`);
  }
  return available;
}

/** One model's verdict. */
export interface OnnxCheck {
  file: string;
  ok: boolean;
  error?: string;
  opset?: number[];
}

/** Runs ONNX's checker + strict shape inference over `files` (one Python process). */
export function checkOnnx(files: string[]): OnnxCheck[] {
  const r = spawnSync(PYTHON, ['-c', SCRIPT, ...files], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`${PYTHON} onnx checker failed to run (exit ${r.status}): ${r.stderr.trim()}`);
  return r.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as OnnxCheck);
}

/** Expects every file to pass; a failure names the file and ONNX's message. */
export function expectOnnxValid(files: string[]): OnnxCheck[] {
  const res = checkOnnx(files);
  expect(res.map((x) => x.file)).toEqual(files);
  for (const x of res) expect(x.ok ? '' : `${x.file}: ${x.error}`).toBe('');
  return res;
}

let noticed = false;
/** `describe` that runs only when ONNX's Python checker is available, printing a notice once otherwise. */
export function describeOnnxChecker(name: string, fn: () => void): void {
  if (haveOnnxChecker()) {
    describe(name, fn);
  } else {
    if (!noticed) {
      noticed = true;
      console.warn(`[weight-spec] ${PYTHON} has no onnx module (Debian python3-onnx): ONNX checker tests skipped`);
    }
    describe.skip(name, fn);
  }
}
