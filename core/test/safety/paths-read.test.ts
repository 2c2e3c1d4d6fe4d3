/**
 * Read-side path policy: every escape attempt a spec could make, and the QEfficient layout
 * (prepared directory symlinked beside the ONNX) that must keep working.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDirs } from '../../../test/support/temp';
import { PathPolicyError, resolveReadPath, tryResolveReadPath, type PathPolicyCode } from '../../src/paths';

const makeTmp = tempDirs('ws-paths-');
let tmp: string;
let exportDir: string;
let preparedReal: string;

function refused(fn: () => unknown, code: PathPolicyCode): PathPolicyError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(PathPolicyError);
    const err = e as PathPolicyError;
    expect(err.code).toBe(code);
    expect(err.message.includes('\n')).toBe(false);
    return err;
  }
  throw new Error(`expected PathPolicyError ${code}`);
}

beforeAll(() => {
  tmp = fs.realpathSync(makeTmp());
  // QEfficient: <parent>/tiny-qeff-prepared-float32 (real) and <export>/tiny-qeff-prepared-float32 -> it
  exportDir = path.join(tmp, 'export');
  preparedReal = path.join(tmp, 'models', 'tiny-qeff-prepared-float32');
  fs.mkdirSync(exportDir, { recursive: true });
  fs.mkdirSync(preparedReal, { recursive: true });
  fs.writeFileSync(path.join(preparedReal, 'base-0000.safetensors'), 'x');
  fs.symlinkSync(preparedReal, path.join(exportDir, 'tiny-qeff-prepared-float32'));
  fs.writeFileSync(path.join(exportDir, 'model.onnx'), 'x');
  fs.mkdirSync(path.join(exportDir, 'sub'));
  fs.writeFileSync(path.join(exportDir, 'sub', 'a.safetensors'), 'x');
  fs.writeFileSync(path.join(tmp, 'secret.safetensors'), 'x');
  fs.symlinkSync(path.join(exportDir, 'loop-b'), path.join(exportDir, 'loop-a'));
  fs.symlinkSync(path.join(exportDir, 'loop-a'), path.join(exportDir, 'loop-b'));
});

describe('resolveReadPath: allowed paths', () => {
  it('resolves a plain relative path against the spec directory', () => {
    const r = resolveReadPath(exportDir, 'sub/a.safetensors');
    expect(r).toEqual({
      abs: path.join(exportDir, 'sub', 'a.safetensors'),
      real: path.join(exportDir, 'sub', 'a.safetensors'),
      viaSymlink: false,
      exists: true,
      root: exportDir,
    });
  });

  it('reports a missing file without throwing', () => {
    const r = resolveReadPath(exportDir, 'nope/b.safetensors');
    expect(r.exists).toBe(false);
    expect(r.abs).toBe(path.join(exportDir, 'nope', 'b.safetensors'));
  });

  it('follows the QEfficient prepared-directory symlink and reports its target', () => {
    const r = resolveReadPath(exportDir, 'tiny-qeff-prepared-float32/base-0000.safetensors');
    expect(r.exists).toBe(true);
    expect(r.viaSymlink).toBe(true);
    expect(r.abs).toBe(path.join(exportDir, 'tiny-qeff-prepared-float32', 'base-0000.safetensors'));
    expect(r.real).toBe(path.join(preparedReal, 'base-0000.safetensors'));
  });

  it('reports the link target for a missing file behind a link', () => {
    const r = resolveReadPath(exportDir, 'tiny-qeff-prepared-float32/base-0001.safetensors');
    expect(r.exists).toBe(false);
    expect(r.real).toBe(path.join(preparedReal, 'base-0001.safetensors'));
  });

  it('accepts ".." that stays inside the spec directory', () => {
    const r = resolveReadPath(exportDir, 'sub/../sub/./a.safetensors');
    expect(r.abs).toBe(path.join(exportDir, 'sub', 'a.safetensors'));
    expect(r.exists).toBe(true);
  });

  it('accepts an absolute path inside the spec directory', () => {
    expect(resolveReadPath(exportDir, path.join(exportDir, 'model.onnx')).exists).toBe(true);
  });

  it('accepts absolute and ".." paths inside a configured root', () => {
    expect(resolveReadPath(exportDir, '../secret.safetensors', [tmp]).root).toBe(tmp);
    expect(resolveReadPath(exportDir, path.join(preparedReal, 'base-0000.safetensors'), [path.join(tmp, 'models')]).exists).toBe(true);
  });

  it('accepts a root given through a symlink for paths spelled with its target', () => {
    const rootLink = path.join(tmp, 'root-link');
    fs.symlinkSync(path.join(tmp, 'models'), rootLink);
    const r = resolveReadPath(exportDir, path.join(preparedReal, 'base-0000.safetensors'), [rootLink]);
    expect(r.exists).toBe(true);
    expect(r.viaSymlink).toBe(false);
  });

  it('treats unicode look-alikes and backslashes as file names, not traversal', () => {
    const name = 'модель-ü-模型.safetensors';
    fs.writeFileSync(path.join(exportDir, name), 'x');
    expect(resolveReadPath(exportDir, name).exists).toBe(true);
    // Fullwidth full stops and division slash are ordinary characters on POSIX.
    expect(resolveReadPath(exportDir, '\uFF0E\uFF0E/x').abs).toBe(path.join(exportDir, '\uFF0E\uFF0E', 'x'));
    expect(resolveReadPath(exportDir, '..\u2215secret.safetensors').abs.startsWith(exportDir + path.sep)).toBe(true);
    expect(resolveReadPath(exportDir, '..\\secret.safetensors').abs.startsWith(exportDir + path.sep)).toBe(true);
  });
});

describe('resolveReadPath: refused escapes', () => {
  it('refuses an absolute path outside every root, naming path and roots', () => {
    const err = refused(() => resolveReadPath(exportDir, '/etc/passwd'), 'path-outside-root');
    expect(err.message).toContain('/etc/passwd');
    expect(err.message).toContain(exportDir);
    expect(err.message).toContain('--root');
  });

  it('refuses ".." leaving the spec directory', () => {
    refused(() => resolveReadPath(exportDir, '../secret.safetensors'), 'path-outside-root');
    refused(() => resolveReadPath(exportDir, 'sub/../../secret.safetensors'), 'path-outside-root');
    refused(() => resolveReadPath(exportDir, '..'), 'path-outside-root');
    refused(() => resolveReadPath(exportDir, '../export-evil/x'), 'path-outside-root');
  });

  it('refuses ".." through a link (judged on the text, not the link target)', () => {
    // tiny-qeff-prepared-float32/.. would be <tmp>/models for the kernel; lexically it is
    // exportDir, and the tool opens the lexical path, so this stays inside.
    const r = resolveReadPath(exportDir, 'tiny-qeff-prepared-float32/../model.onnx');
    expect(r.abs).toBe(path.join(exportDir, 'model.onnx'));
    refused(() => resolveReadPath(exportDir, 'tiny-qeff-prepared-float32/../../secret.safetensors'), 'path-outside-root');
  });

  it('refuses a root-prefix look-alike (export vs export2)', () => {
    fs.mkdirSync(path.join(tmp, 'export2'), { recursive: true });
    refused(() => resolveReadPath(exportDir, `${exportDir}2/x.safetensors`), 'path-outside-root');
  });

  it('refuses a symlink loop', () => {
    refused(() => resolveReadPath(exportDir, 'loop-a'), 'symlink-loop');
    refused(() => resolveReadPath(exportDir, 'loop-a/x.safetensors'), 'symlink-loop');
  });

  it('refuses NUL bytes, empty paths and non-strings', () => {
    const err = refused(() => resolveReadPath(exportDir, 'a.safetensors\0.txt'), 'path-invalid');
    expect(err.message).toContain('\\u0000');
    refused(() => resolveReadPath(exportDir, ''), 'path-invalid');
    refused(() => resolveReadPath(exportDir, 42 as unknown as string), 'path-invalid');
  });

  it('refuses over-long paths and segments with a short message', () => {
    const err = refused(() => resolveReadPath(exportDir, 'a/'.repeat(3000)), 'path-invalid');
    expect(err.message.length).toBeLessThan(400);
    refused(() => resolveReadPath(exportDir, 'x'.repeat(256)), 'path-invalid');
    // 86 three-byte characters = 258 bytes: the limit is in bytes, not characters.
    refused(() => resolveReadPath(exportDir, '模'.repeat(86)), 'path-invalid');
    expect(resolveReadPath(exportDir, 'x'.repeat(255)).exists).toBe(false);
  });

  it('tryResolveReadPath returns the error as a value', () => {
    const r = tryResolveReadPath(exportDir, '/etc/passwd');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.code).toBe('path-outside-root');
    const ok = tryResolveReadPath(exportDir, 'model.onnx');
    expect(ok.ok && ok.value.exists).toBe(true);
  });
});
