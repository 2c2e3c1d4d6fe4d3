/**
 * The path policy as users meet it: `checkSpec` (the language server's and `weight-spec
 * check`'s diagnostics) on specs whose `files[].path` try to escape, and on the QEfficient
 * layout (prepared directory symlinked beside the spec), which must check clean.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDirs } from '../../../test/support/temp';
import { HeaderCache, checkSpec } from '../../src/check';
import { serializeSafetensors } from '../../src/formats/safetensors';

const makeTmp = tempDirs('ws-paths-check-');
let tmp: string;
let exportDir: string;

beforeAll(() => {
  tmp = fs.realpathSync(makeTmp());
  exportDir = path.join(tmp, 'export');
  const prepared = path.join(tmp, 'tiny-qeff-prepared-float32');
  fs.mkdirSync(exportDir);
  fs.mkdirSync(prepared);
  const st = serializeSafetensors([{ key: 'w', dtype: 'F32', shape: [2], data: new Uint8Array(8) }]);
  fs.writeFileSync(path.join(prepared, 'base-0000.safetensors'), st);
  fs.writeFileSync(path.join(prepared, '.checkpoint_prepared'), '');
  fs.symlinkSync(prepared, path.join(exportDir, 'tiny-qeff-prepared-float32'));
  fs.writeFileSync(path.join(tmp, 'secret.safetensors'), st);
});

function spec(p: string): string {
  return JSON.stringify(
    { files: [{ format: 'safetensors', path: p }], inputs: [{ location: { file: 0, key: 'w' }, name: 'w' }], version: 5 },
    null,
    2,
  );
}

async function codes(p: string, roots?: string[]): Promise<{ codes: string[]; messages: string[] }> {
  const problems = await checkSpec(path.join(exportDir, 'weight_spec.json'), spec(p), { roots, onnx: false, cache: new HeaderCache() });
  // Only the codes about reaching the file matter here (prepared-state checks are another module's).
  const fileCodes = new Set([
    'path-outside-root',
    'path-invalid',
    'symlink-loop',
    'file-missing',
    'file-not-safetensors',
    'file-unreadable',
    'key-missing',
  ]);
  return {
    codes: problems.filter((x) => x.severity === 'error' && fileCodes.has(x.code)).map((x) => x.code),
    messages: problems.map((x) => x.message),
  };
}

describe('checkSpec applies the path policy', () => {
  it('checks the QEfficient symlinked prepared directory clean', async () => {
    expect((await codes('tiny-qeff-prepared-float32/base-0000.safetensors')).codes).toEqual([]);
  });

  for (const [what, p, code] of [
    ['"..", leaving the spec directory', '../secret.safetensors', 'path-outside-root'],
    ['an absolute path outside the roots', '/etc/passwd', 'path-outside-root'],
    ['".." through the symlinked directory', 'tiny-qeff-prepared-float32/../../secret.safetensors', 'path-outside-root'],
    ['a NUL byte', 'base\u0000.safetensors', 'path-invalid'],
    ['a 5000-byte path', 'a/'.repeat(2500), 'path-invalid'],
  ] as const) {
    it(`refuses ${what} with ${code}, reading nothing`, async () => {
      const r = await codes(p);
      expect(r.codes).toEqual([code]);
      expect(r.messages.every((m) => !m.includes('\n'))).toBe(true);
    });
  }

  it('accepts the same escape once its target lies inside a configured root', async () => {
    expect((await codes('../secret.safetensors', [tmp])).codes).toEqual([]);
  });
});
