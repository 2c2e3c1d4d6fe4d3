// The server survives broken specs and broken referenced files: each gets diagnostics (or
// none), never a crash, and the server keeps answering afterwards.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { safetensorsBytes, tempDir } from '../../core/test/support/check-helpers';
import { positionOf, startInMemory, type TestClient } from './harness';
import { makeWorkspace } from './workspace';

const brokenSpecs: [string, string][] = [
  ['empty', ''],
  ['whitespace', '   \n\t '],
  ['not json', 'hello world'],
  ['array', '[1, 2, 3]'],
  ['null', 'null'],
  ['unterminated string', '{"files": [{"path": "a'],
  ['unterminated object', '{"files": [], "inputs": ['],
  ['deep nesting', '['.repeat(5000) + ']'.repeat(5000)],
  ['proto pollution', '{"__proto__": {"x": 1}, "files": [], "inputs": [], "version": 5}'],
  ['wrong types', '{"files": 3, "inputs": "x", "version": -1}'],
  ['null input', '{"files": [], "inputs": [null], "version": 5}'],
  [
    'negative file index',
    '{"files": [{"path": "a.safetensors", "format": "safetensors"}], "inputs": [{"name": "a", "location": {"file": -3, "key": "k"}}], "version": 5}',
  ],
  ['huge file index', '{"files": [], "inputs": [{"name": "a", "location": {"file": 1e300, "key": "k"}}], "version": 5}'],
  ['NUL in path', '{"files": [{"path": "a\\u0000b", "format": "safetensors"}], "inputs": [], "version": 5}'],
  ['absolute path', '{"files": [{"path": "/etc/shadow", "format": "safetensors"}], "inputs": [], "version": 5}'],
  ['directory path', '{"files": [{"path": ".", "format": "safetensors"}], "inputs": [], "version": 5}'],
  ['long path', `{"files": [{"path": "${'a/'.repeat(5000)}", "format": "safetensors"}], "inputs": [], "version": 5}`],
  [
    'v1 spec',
    '{"version": 1, "checkpoint_files": ["x.safetensors"], "inputs": [{"fqn": "w", "kind": "weight", "shape": [2], "dtype": "float32"}]}',
  ],
  ['future version', '{"version": 99, "files": [], "inputs": []}'],
  ['lone surrogate', '{"files": [], "inputs": [{"name": "\\ud800", "location": {"file": 0, "key": "\\udfff"}}], "version": 5}'],
  ['comments', '// hi\n{"files": [], "inputs": [], "version": 5}'],
  ['BOM', '\ufeff{"files": [], "inputs": [], "version": 5}'],
];

describe('robustness corpus', () => {
  let client: TestClient;
  let dir: string;
  beforeAll(async () => {
    client = await startInMemory();
    dir = tempDir('ws-lsp-corpus-');
  });
  afterAll(() => client.close());

  it.each(brokenSpecs)('broken spec: %s', async (name, text) => {
    const file = path.join(dir, `${name.replace(/\W+/g, '-')}.weight_spec.json`);
    writeFileSync(file, text);
    const { uri, diagnostics } = await client.open(file, text);
    expect(Array.isArray(diagnostics)).toBe(true);
    for (const d of diagnostics) {
      expect(typeof d.code).toBe('string');
      expect((typeof d.message === 'string' ? d.message : d.message.value).includes('\n')).toBe(false);
    }
    // The other handlers answer too.
    const pos = positionOf(text, Math.floor(text.length / 2));
    await client.request('textDocument/hover', { textDocument: { uri }, position: pos });
    await client.request('textDocument/completion', { textDocument: { uri }, position: pos });
    await client.request('textDocument/documentSymbol', { textDocument: { uri } });
    await client.request('textDocument/codeLens', { textDocument: { uri } });
    await client.request('textDocument/formatting', { textDocument: { uri }, options: { tabSize: 2, insertSpaces: true } });
    await client.request('textDocument/inlayHint', {
      textDocument: { uri },
      range: { start: { line: 0, character: 0 }, end: { line: 9999, character: 0 } },
    });
    client.notify('textDocument/didClose', { textDocument: { uri } });
  });

  it('broken referenced files: truncated safetensors, garbage ONNX, hostile header', async () => {
    const ws = makeWorkspace();
    const good = safetensorsBytes([
      { key: 'lm_head.weight', dtype: 'F32', shape: [16, 4] },
      { key: 'model.norm.weight', dtype: 'F32', shape: [4] },
    ]);
    writeFileSync(path.join(ws.dir, 'ckpt', 'b.safetensors'), good.subarray(0, good.length - 7)); // truncated data
    writeFileSync(path.join(ws.dir, 'model.onnx'), Buffer.from('\x08\x07\x12\xff\xff\xff\xff\x0f garbage onnx'));
    const hostile = Buffer.alloc(16);
    hostile.writeBigUInt64LE(2n ** 60n);
    mkdirSync(path.join(ws.dir, 'ckpt'), { recursive: true });
    writeFileSync(path.join(ws.dir, 'ckpt', 'a.safetensors'), hostile);
    const { uri, text, diagnostics } = await client.open(ws.specFile);
    const codes = diagnostics.map((d) => d.code);
    expect(codes.filter((c) => c === 'file-not-safetensors')).toHaveLength(2);
    expect(codes).toContain('onnx-unreadable');
    const hover = await client.request('textDocument/hover', {
      textDocument: { uri },
      position: positionOf(text, text.indexOf('ckpt/a.safetensors') + 1),
    });
    expect(hover).not.toBeNull();
  });

  it('an ONNX that is a directory and a spec whose files are directories', async () => {
    const ws = makeWorkspace();
    mkdirSync(path.join(ws.dir, 'other.onnx'));
    const s = ws.spec();
    s.files[0]!.path = 'ckpt';
    const { diagnostics } = await client.open(ws.specFile, ws.text(s));
    expect(diagnostics.length).toBeGreaterThan(0);
  });

  it('still serves a valid spec after all of that', async () => {
    const ws = makeWorkspace();
    expect((await client.open(ws.specFile)).diagnostics).toEqual([]);
  });
});
