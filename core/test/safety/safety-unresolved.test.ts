/**
 * Issue #14, point 7: `export --onnx … --allow-unresolved` keeps unresolved initializers in
 * the graph; one whose bytes are external data would point, beside the new model.onnx, at a
 * file that is not there — a model that does not load, exported with exit 0. It is refused.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { fromFloat32 } from '../../src/formats/float-convert';
import { encodeModel, externalTensor, makeNode, makeValueInfo } from '../../src/formats/onnx';
import { writeSafetensors } from '../../src/formats/safetensors';
import { REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');
const tmp = tempDirs('ws-unresolved-');

beforeAll(() => {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first`);
});

describe('--allow-unresolved with external data (#14.7)', () => {
  it('is refused with one line, and no export is written', async () => {
    const dir = tmp();
    const ckpt = path.join(dir, 'ckpt');
    fs.mkdirSync(ckpt);
    await writeSafetensors(path.join(ckpt, 'model.safetensors'), [
      {
        key: 'w',
        dtype: 'BF16',
        shape: [4, 4],
        data: fromFloat32(
          new Float32Array(16).map((_, i) => i / 8),
          'BF16',
        ),
      },
    ]);
    const legacy = path.join(dir, 'legacy');
    fs.mkdirSync(legacy);
    // Values the checkpoint does not hold, stored as external data beside the legacy ONNX.
    fs.writeFileSync(path.join(legacy, 'weights.bin'), Buffer.from(new Float32Array(16).map((_, i) => 100 + i).buffer));
    const onnx = path.join(legacy, 'legacy.onnx');
    fs.writeFileSync(
      onnx,
      encodeModel({
        irVersion: 7,
        opsetImport: [{ domain: '', version: 14 }],
        graph: {
          name: 'g',
          node: [makeNode('MatMul', ['x', 'onnx::MatMul_5'], ['y'])],
          initializer: [externalTensor('onnx::MatMul_5', 'F32', [4, 4], { location: 'weights.bin', offset: 0 })],
          input: [makeValueInfo('x', 'F32', [1, 4])],
          output: [makeValueInfo('y', 'F32', [1, 4])],
        },
      }),
    );
    const out = path.join(dir, 'out');
    const r = spawnSync(process.execPath, [CLI, 'export', '--onnx', onnx, '--checkpoint', ckpt, '--out', out, '--allow-unresolved'], {
      encoding: 'utf8',
      env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off' },
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(
      `weight-spec: ${onnx}: initializer "onnx::MatMul_5" matches no tensor of ${ckpt} and its data is external (${path.join(legacy, 'weights.bin')}); ` +
        'the export cannot keep it: add the tensor to the checkpoint, or embed it in the legacy ONNX\n',
    );
    expect(fs.existsSync(path.join(out, 'model.onnx'))).toBe(false);
  });
});
