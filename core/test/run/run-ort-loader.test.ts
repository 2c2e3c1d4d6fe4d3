/** onnxruntime-node is loaded at call time; an explicit location (option or WEIGHT_SPEC_ORT_PATH) wins. */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadOrt } from '../../src/run';
import { REPO_ROOT } from '../../../test/support/fixtures';

describe('loadOrt', () => {
  it('loads the package from an explicit directory', () => {
    const ort = loadOrt(path.join(REPO_ROOT, 'node_modules', 'onnxruntime-node'));
    expect(typeof ort.InferenceSession.create).toBe('function');
    expect(typeof ort.Tensor).toBe('function');
  });

  it('names a bad WEIGHT_SPEC_ORT_PATH in one line', () => {
    const env = { WEIGHT_SPEC_ORT_PATH: '/nonexistent/onnxruntime-node' };
    expect(() => loadOrt(undefined, env)).toThrow(
      /^cannot load ONNX Runtime from \/nonexistent\/onnxruntime-node \(WEIGHT_SPEC_ORT_PATH\): Cannot find module/,
    );
  });

  it('refuses a module that is not onnxruntime-node', () => {
    expect(() => loadOrt(path.join(REPO_ROOT, 'node_modules', 'zod'))).toThrow(/not an onnxruntime-node module/);
  });
});
