/**
 * Issue #14 in the language server: a FIFO beside a spec is reported instead of blocking
 * every later check (point 2), and a removed workspace folder stops admitting paths
 * (point 12). Real LSP JSON-RPC over in-memory streams.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { twoFileCheckpoint } from '../../core/test/support/check-helpers';
import { tempDirs } from '../../test/support/temp';
import { startInMemory } from './harness';

const tmp = tempDirs('ws-lsp-safety-');

/** Resolves to `p`, or rejects after `ms` (a hang fails the test instead of stalling it). */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms))]);
}

describe('language server safety', () => {
  it('a FIFO model.onnx beside a spec is a diagnostic, and later edits still get diagnostics (#14.2)', async () => {
    const dir = tmp();
    const { spec } = twoFileCheckpoint(dir);
    const specFile = path.join(dir, 'model.weight_spec.json');
    fs.writeFileSync(specFile, JSON.stringify(spec, null, 2));
    execFileSync('mkfifo', [path.join(dir, 'model.onnx')]);
    const client = await startInMemory();
    try {
      const { uri, text, diagnostics } = await within(client.open(specFile), 10_000, 'first diagnostics');
      expect(diagnostics.map((d) => d.message).join('\n')).toContain(
        'the companion ONNX cannot be read (is a FIFO, expected a file): model.onnx',
      );
      const at = text.indexOf('"version"');
      const again = await within(client.edit(uri, at, at, ' '), 10_000, 'diagnostics after an edit');
      expect(again.map((d) => d.message).join('\n')).toContain('is a FIFO, expected a file');
    } finally {
      client.close();
    }
  });

  it('forgets a workspace folder once it is removed (#14.12)', async () => {
    const dir = tmp();
    const { spec } = twoFileCheckpoint(path.join(dir, 'weights'));
    const weights = path.join(dir, 'weights');
    const specDir = path.join(dir, 'specs');
    fs.mkdirSync(specDir);
    // Absolute paths into the other workspace folder: allowed only while it is a root.
    const absSpec = { ...spec, files: spec.files.map((f) => ({ ...f, path: path.join(weights, f.path) })) };
    const specFile = path.join(specDir, 'model.weight_spec.json');
    fs.writeFileSync(specFile, JSON.stringify(absSpec, null, 2));
    const folder = (p: string) => ({ uri: pathToFileURL(p).toString(), name: path.basename(p) });
    for (const capabilities of [{ workspace: { workspaceFolders: true } }, {}]) {
      const client = await startInMemory({ capabilities, workspaceFolders: [folder(specDir), folder(weights)] });
      try {
        const { uri, text, diagnostics } = await client.open(specFile);
        expect(diagnostics.filter((d) => d.code === 'path-outside-root')).toEqual([]);
        client.notify('workspace/didChangeWorkspaceFolders', { event: { added: [], removed: [folder(weights)] } });
        const at = text.indexOf('"version"');
        const after = await client.edit(uri, at, at, ' ');
        expect(after.filter((d) => d.code === 'path-outside-root').length, JSON.stringify(capabilities)).toBe(spec.files.length);
        client.notify('workspace/didChangeWorkspaceFolders', { event: { added: [folder(weights)], removed: [] } });
        const back = await client.edit(uri, at, at, ' ');
        expect(back.filter((d) => d.code === 'path-outside-root')).toEqual([]);
      } finally {
        client.close();
      }
    }
  });
});
