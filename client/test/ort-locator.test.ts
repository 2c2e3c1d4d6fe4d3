import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { locateOrt, ORT_PROMPT, ortPackageDir, ortPromptNote, storagePrefix } from '../src/ort-locator';
import { tempDirs } from '../../test/support/temp';

const tmpDir = tempDirs('ws-');

const repo = path.resolve(__dirname, '..', '..');
const realOrt = path.join(repo, 'node_modules', 'onnxruntime-node');

function fakePackage(dir: string, name = 'onnxruntime-node'): string {
  fs.mkdirSync(path.join(dir, 'dist'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name, version: '9.9.9' }));
  fs.writeFileSync(path.join(dir, 'dist', 'index.js'), '');
  return dir;
}

describe('workspace trust (package.json)', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8'));
  it('limited support in Restricted Mode: the code-loading settings are restricted, and apply from User settings in a remote window', () => {
    expect(pkg.capabilities.untrustedWorkspaces).toMatchObject({
      supported: 'limited',
      restrictedConfigurations: ['weightSpec.onnxRuntimePath', 'weightSpec.qaicCompilePath'],
    });
    expect(pkg.capabilities.virtualWorkspaces).toBe(false);
    const props = pkg.contributes.configuration.properties;
    // `window`, not `machine`/`machine-overridable`: a remote window (code-server, SSH, WSL)
    // drops machine-scoped values of the User settings, so a path set there was silently
    // ignored in code-server (issue 50; the e2e Run check sets it in code-server's User settings).
    for (const k of pkg.capabilities.untrustedWorkspaces.restrictedConfigurations) expect(props[k].scope).toBe('window');
  });
});

describe('locateOrt', () => {
  it('finds the real onnxruntime-node of this checkout from the package dir, an entry file or node_modules', () => {
    expect(ortPackageDir(realOrt)).toBe(realOrt);
    expect(ortPackageDir(path.join(repo, 'node_modules'))).toBe(realOrt);
    const entry = JSON.parse(fs.readFileSync(path.join(realOrt, 'package.json'), 'utf8')).main as string;
    expect(ortPackageDir(path.join(realOrt, entry))).toBe(realOrt);
    expect(locateOrt({ setting: realOrt, workspaceFolders: [], trusted: true, storageDir: '/nonexistent' })).toMatchObject({
      dir: realOrt,
      source: 'setting',
      version: '1.30.0',
    });
  });

  it('setting first, then workspace, extension dir and storage, in that order', () => {
    const root = tmpDir('ws-ort-');
    const ws = path.join(root, 'ws');
    const ext = path.join(root, 'ext');
    const storage = path.join(root, 'storage');
    const search = { workspaceFolders: [path.join(root, 'empty'), ws], trusted: true, extensionDir: ext, storageDir: storage };
    expect(locateOrt(search)).toBeUndefined();
    const inStorage = fakePackage(path.join(storagePrefix(storage), 'node_modules', 'onnxruntime-node'));
    expect(locateOrt(search)).toMatchObject({ dir: inStorage, source: 'storage' });
    const inExt = fakePackage(path.join(ext, 'node_modules', 'onnxruntime-node'));
    expect(locateOrt(search)).toMatchObject({ dir: inExt, source: 'extension' });
    const inWs = fakePackage(path.join(ws, 'node_modules', 'onnxruntime-node'));
    expect(locateOrt(search)).toMatchObject({ dir: inWs, source: 'workspace', version: '9.9.9' });
    expect(locateOrt({ ...search, setting: realOrt })).toMatchObject({ dir: realOrt, source: 'setting' });
    // Restricted Mode: the workspace's native module is never picked.
    expect(locateOrt({ ...search, trusted: false })).toMatchObject({ dir: inExt, source: 'extension' });
  });

  it('a setting that holds no onnxruntime-node is an error, not a silent fallback', () => {
    const root = tmpDir('ws-ort-');
    const other = fakePackage(path.join(root, 'not-ort'), 'left-pad');
    const r = locateOrt({ setting: other, workspaceFolders: [repo], trusted: true, storageDir: root });
    expect(r).toEqual({ error: `weightSpec.onnxRuntimePath: ${other} holds no onnxruntime-node package` });
  });
});

describe('the install prompt without Install (issue 50)', () => {
  it('an unanswered prompt is not logged as declined; Open Settings says what to do next', () => {
    const closed = ortPromptNote(undefined);
    expect(closed).not.toMatch(/declin/i);
    expect(closed).toBe(
      'ONNX Runtime is missing: the install prompt was closed without an answer; run again to be asked again, or set weightSpec.onnxRuntimePath',
    );
    expect(ortPromptNote(ORT_PROMPT.settings)).toBe(
      'ONNX Runtime is missing: the weightSpec.onnxRuntimePath setting was opened; run again once it points at onnxruntime-node',
    );
    expect(ORT_PROMPT).toEqual({ install: 'Install', settings: 'Open Settings' });
  });
});
