/**
 * `export --onnx` refusals through the CLI: one line on stderr naming the file, exit 1,
 * and no export directory that looks complete.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fromFloat32 } from '../../src/formats/float-convert';
import { encodeModel, makeNode, makeTensor, makeValueInfo } from '../../src/formats/onnx';
import { writeSafetensors } from '../../src/formats/safetensors';
import { REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const tmpDir = tempDirs('ws-');

const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');
const cli = (args: string[]) =>
  spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off' } });

async function setup(): Promise<{ dir: string; ckpt: string }> {
  const dir = tmpDir('ws-export-err-');
  const ckpt = path.join(dir, 'ckpt');
  mkdirSync(ckpt);
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
  return { dir, ckpt };
}

describe('export --onnx refusals', () => {
  it('garbage instead of an ONNX file: one line naming the file', async () => {
    const { dir, ckpt } = await setup();
    const bad = path.join(dir, 'bad.onnx');
    writeFileSync(bad, 'this is not protobuf at all, just text\n');
    const r = cli(['export', '--onnx', bad, '--checkpoint', ckpt, '--out', path.join(dir, 'out')]);
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(bad);
    expect(existsSync(path.join(dir, 'out', 'export-report.json'))).toBe(false);
  });

  it('a weight no checkpoint tensor holds is an error unless --allow-unresolved', async () => {
    const { dir, ckpt } = await setup();
    const onnx = path.join(dir, 'legacy.onnx');
    const w = new Float32Array(16).map((_, i) => 100 + i); // values the checkpoint does not hold
    writeFileSync(
      onnx,
      encodeModel({
        irVersion: 7,
        opsetImport: [{ domain: '', version: 14 }],
        graph: {
          name: 'g',
          node: [makeNode('MatMul', ['x', 'onnx::MatMul_5'], ['y'])],
          initializer: [makeTensor('onnx::MatMul_5', 'F32', [4, 4], new Uint8Array(w.buffer))],
          input: [makeValueInfo('x', 'F32', [1, 4])],
          output: [makeValueInfo('y', 'F32', [1, 4])],
        },
      }),
    );
    const out = path.join(dir, 'out');
    const r = cli(['export', '--onnx', onnx, '--checkpoint', ckpt, '--out', out]);
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('onnx::MatMul_5');
    expect(r.stderr).toContain('--allow-unresolved');
    expect(existsSync(path.join(out, 'model.onnx'))).toBe(false);

    const ok = cli(['export', '--onnx', onnx, '--checkpoint', ckpt, '--out', out, '--allow-unresolved']);
    expect(ok.status, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('onnx::MatMul_5');
  });

  it('--onnx without --checkpoint is a usage error (exit 2)', () => {
    const r = cli(['export', '--onnx', 'x.onnx', '--out', 'o']);
    expect(r.status).toBe(2);
  });
});
