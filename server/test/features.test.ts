// Completion, code lenses, formatting, watching and cancellation over real JSON-RPC.
import { SpecStateRequest } from '../../core/src/protocol';
import { existsSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CodeLens, CompletionList, Hover } from 'vscode-languageserver-protocol';
import { writeTensors } from '../../core/test/support/check-helpers';
import { applyEdits, positionOf, startInMemory, textOf, type TestClient } from './harness';
import { makeWorkspace, openWorkspace } from './workspace';

describe('language features on a workspace spec', () => {
  let client: TestClient;
  let ws: ReturnType<typeof makeWorkspace>;
  let uri: string;
  beforeAll(async () => {
    ({ client, ws, uri } = await openWorkspace());
  });
  afterAll(() => client.close());

  it('completes keys of every shard inside location.key, the referenced file first', async () => {
    const text = ws.text(ws.spec());
    await client.replace(uri, text);
    const at = text.indexOf('"key": "model.norm.weight"') + 9;
    const list = await client.request<CompletionList>('textDocument/completion', { textDocument: { uri }, position: positionOf(text, at) });
    // issue 50.3: both shards' keys (files[1]'s first, then files[0]'s)
    const order = [...list.items].sort((a, b) => a.sortText!.localeCompare(b.sortText!)).map((i) => i.label);
    expect(order).toEqual([
      'model.norm.weight',
      'lm_head.weight',
      'model.embed_tokens.weight',
      'model.embed_tokens.weight.f16',
      'model.layers.0.self_attn.k_proj.weight',
      'model.layers.0.self_attn.q_proj.weight',
    ]);
    const item = list.items.find((i) => i.label === 'lm_head.weight')!;
    expect(item.detail).toBe('F32 [16, 4] · files[1]');
    expect(item.additionalTextEdits).toBeUndefined();
    // The edit covers the string's content only (no quotes, no filterText), so a client that
    // inserts at the edit's start (Neovim's omnifunc) and VS Code produce the same text.
    expect(item.textEdit).toMatchObject({ newText: 'lm_head.weight' });
    expect(item.filterText).toBeUndefined();
    const edit = item.textEdit as { range: Parameters<typeof textOf>[1]; newText: string };
    expect(textOf(text, edit.range)).toBe('model.norm.weight');
    const out = applyEdits(text, [edit]);
    expect(JSON.parse(out).inputs.some((i: { location: { key: string } }) => i.location.key === 'lm_head.weight')).toBe(true);
  });

  it('accepting a completion in a half-typed key leaves valid JSON with the complete key', async () => {
    const base = ws.text(ws.spec());
    const start = base.indexOf('"key": "model.layers.0.self_attn.q_proj.weight"') + 8;
    const end = start + 'model.layers.0.self_attn.q_proj.weight'.length;
    const typed = base.slice(0, start) + 'model.layers.0.self_attn.q' + base.slice(end);
    await client.replace(uri, typed);
    const at = start + 'model.layers.0.self_attn.q'.length;
    const list = await client.request<CompletionList>('textDocument/completion', {
      textDocument: { uri },
      position: positionOf(typed, at),
    });
    const item = list.items.find((i) => i.label === 'model.layers.0.self_attn.q_proj.weight')!;
    const edit = item.textEdit as { range: Parameters<typeof textOf>[1]; newText: string };
    expect(textOf(typed, edit.range)).toBe('model.layers.0.self_attn.q');
    const out = applyEdits(typed, [edit]);
    expect(out).toBe(base);
    // No closing quote yet: the edit brings it.
    const open = base.slice(0, start) + 'model.layers.0.self_attn.q\n' + base.slice(end + 1).replace(/^,?/, '');
    await client.replace(uri, open);
    const list2 = await client.request<CompletionList>('textDocument/completion', {
      textDocument: { uri },
      position: positionOf(open, at),
    });
    const e2 = list2.items.find((i) => i.label === 'model.layers.0.self_attn.q_proj.weight')!.textEdit as { newText: string };
    expect(e2.newText).toBe('model.layers.0.self_attn.q_proj.weight"');
  });

  it('a client that replaces only the word at the cursor with insertText (eglot 1.9, C-M-i) gets the same key as the edit', async () => {
    const base = ws.text(ws.spec());
    const key = 'model.layers.0.self_attn.q_proj.weight';
    const start = base.indexOf(`"key": "${key}"`) + 8;
    // Typed up to a '.', typed into the last part, and without the closing quote yet.
    for (const [typed, tail] of [
      ['model.layers.0.self_attn.', base.slice(start + key.length)],
      ['model.layers.0.self_attn.q_p', base.slice(start + key.length)],
      ['model.layers.0.self_attn.q_p\n', base.slice(start + key.length + 1).replace(/^,?/, '')],
    ] as const) {
      const doc = base.slice(0, start) + typed + tail;
      await client.replace(uri, doc);
      const at = start + typed.trimEnd().length;
      const list = await client.request<CompletionList>('textDocument/completion', {
        textDocument: { uri },
        position: positionOf(doc, at),
      });
      const item = list.items.find((i) => i.label === key)!;
      expect(item.filterText).toBeUndefined();
      // The word at the cursor, as Emacs's symbol bounds in js-mode see it ('.' ends a word).
      let from = at;
      while (from > 0 && /[\w$]/.test(doc[from - 1]!)) from--;
      let to = at;
      while (/[\w$]/.test(doc[to] ?? '')) to++;
      const byWord = doc.slice(0, from) + item.insertText! + doc.slice(to);
      const byEdit = applyEdits(doc, [item.textEdit as { range: Parameters<typeof textOf>[1]; newText: string }]);
      expect(byWord).toBe(byEdit);
      if (!typed.endsWith('\n')) expect(byWord).toBe(base);
    }
  });

  it('a client that takes itemDefaults.editRange (VS Code) gets the range once, and the same edits', async () => {
    const vscodeLike = await startInMemory({
      capabilities: {
        textDocument: {
          completion: { completionList: { itemDefaults: ['commitCharacters', 'editRange', 'insertTextFormat', 'insertTextMode', 'data'] } },
        },
      },
    });
    try {
      const { uri: u } = await vscodeLike.open(ws.specFile);
      const base = ws.text(ws.spec());
      const start = base.indexOf('"key": "model.layers.0.self_attn.q_proj.weight"') + 8;
      const end = start + 'model.layers.0.self_attn.q_proj.weight'.length;
      for (const [typed, tail] of [
        ['model.layers.0.self_attn.q', base.slice(end)],
        ['model.layers.0.self_attn.q\n', base.slice(end + 1).replace(/^,?/, '')],
      ] as const) {
        const doc = base.slice(0, start) + typed + tail;
        await vscodeLike.replace(u, doc);
        await client.replace(uri, doc);
        const at = start + 'model.layers.0.self_attn.q'.length;
        const shared = await vscodeLike.request<CompletionList>('textDocument/completion', {
          textDocument: { uri: u },
          position: positionOf(doc, at),
        });
        const each = await client.request<CompletionList>('textDocument/completion', {
          textDocument: { uri },
          position: positionOf(doc, at),
        });
        const range = shared.itemDefaults?.editRange as Parameters<typeof textOf>[1];
        expect(textOf(doc, range)).toBe(typed.trimEnd());
        expect(shared.items.every((i) => i.textEdit === undefined)).toBe(true);
        // What the client inserts (textEditText, else the label, over the list's range) is what
        // the per-item edits of a client without the capability insert.
        const got = shared.items.map((i) => applyEdits(doc, [{ range, newText: i.textEditText ?? i.label }])).sort();
        const want = each.items
          .map((i) => applyEdits(doc, [i.textEdit as { range: Parameters<typeof textOf>[1]; newText: string }]))
          .sort();
        expect(got).toEqual(want);
        if (tail === base.slice(end)) expect(got).toContain(base);
      }
    } finally {
      vscodeLike.close();
    }
  });

  it('completes graph input names inside name', async () => {
    const text = ws.text(ws.spec());
    await client.replace(uri, text);
    const at = text.indexOf('"name": "lm_head.weight"') + 10;
    const list = await client.request<CompletionList>('textDocument/completion', { textDocument: { uri }, position: positionOf(text, at) });
    const labels = list.items.map((i) => i.label);
    expect(labels).toContain('model.norm.weight');
    expect(labels).not.toContain('input_ids'); // runtime inputs are not weights
  });

  it('hover on a name shows the graph input, on a path the file facts', async () => {
    const text = ws.text(ws.spec());
    await client.replace(uri, text);
    const onName = await client.request<Hover>('textDocument/hover', {
      textDocument: { uri },
      position: positionOf(text, text.indexOf('"name": "lm_head.weight"') + 11),
    });
    expect((onName.contents as { value: string }).value).toContain('ONNX input `lm_head.weight` of `model.onnx`: `F32` `[16, 4]`');
    const onFile = await client.request<Hover>('textDocument/hover', {
      textDocument: { uri },
      position: positionOf(text, text.indexOf('ckpt/b.safetensors') + 2),
    });
    expect((onFile.contents as { value: string }).value).toContain('2 tensors');
  });

  it('hover on a path that goes through a symlink (QEfficient links the prepared dir) shows where it leads', async () => {
    // ckpt-link → ckpt, as QEfficient links the prepared directory beside the ONNX.
    const link = path.join(ws.dir, 'ckpt-link');
    if (!existsSync(link)) symlinkSync(path.join(ws.dir, 'ckpt'), link);
    const s = ws.spec();
    s.files[1]!.path = 'ckpt-link/b.safetensors';
    const text = ws.text(s);
    await client.replace(uri, text);
    const onFile = await client.request<Hover>('textDocument/hover', {
      textDocument: { uri },
      position: positionOf(text, text.indexOf('ckpt-link/b.safetensors') + 2),
    });
    const value = (onFile.contents as { value: string }).value;
    expect(value).toContain(`through a symlink to: \`${path.join(realpathSync(ws.dir), 'ckpt', 'b.safetensors')}\``);
    expect(value).toContain('2 tensors');
  });

  it('code lenses: Prepare checkpoint, Compile (never compiled), Inspect ONNX with the right arguments', async () => {
    const lenses = await client.request<CodeLens[]>('textDocument/codeLens', { textDocument: { uri } });
    expect(lenses.map((l) => l.command!.title)).toEqual(['Prepare checkpoint', 'Compile (never compiled)', 'Inspect ONNX']);
    // This client declared no clientCommands: the lenses carry the server's own commands.
    expect(lenses.map((l) => l.command!.command)).toEqual([
      'weight-spec.server.prepare',
      'weight-spec.server.compile',
      'weight-spec.server.inspect',
    ]);
    expect(lenses[0]!.command!.arguments).toEqual([uri]);
    expect(lenses[1]!.command!.arguments).toEqual([uri]);
    expect(lenses[2]!.command!.arguments).toEqual([pathToFileURL(path.join(ws.dir, 'model.onnx')).toString()]);
  });

  it('formats a spec as QEfficient writes it (indent 2, sorted keys, no trailing newline)', async () => {
    const messy = JSON.stringify(ws.spec());
    await client.replace(uri, messy);
    const edits = await client.request<{ range: never; newText: string }[]>('textDocument/formatting', {
      textDocument: { uri },
      options: { tabSize: 4, insertSpaces: true },
    });
    const out = applyEdits(messy, edits);
    expect(out.startsWith('{\n  "files": [\n    {\n      "format": "safetensors",\n      "path": "ckpt/a.safetensors"\n    },')).toBe(true);
    expect(out.endsWith('\n  "version": 5\n}')).toBe(true);
    expect(JSON.parse(out)).toEqual(ws.spec());
    expect(await client.replace(uri, out)).toEqual([]);
  });

  it('re-validates when a referenced file changes on disk (didChangeWatchedFiles)', async () => {
    expect(client.registrations.some((r) => (r as { method: string }).method === 'workspace/didChangeWatchedFiles')).toBe(true);
    expect(await client.replace(uri, ws.text(ws.spec()))).toEqual([]);
    const b = path.join(ws.dir, 'ckpt', 'b.safetensors');
    writeTensors(b, [{ key: 'model.norm.weight', dtype: 'F32', shape: [4] }]); // lm_head.weight gone
    const next = client.nextDiagnostics(uri);
    client.notify('workspace/didChangeWatchedFiles', { changes: [{ uri: pathToFileURL(b).toString(), type: 2 }] });
    const diags = await next;
    expect(diags.map((d) => d.code)).toEqual(['key-missing']);
    writeTensors(b, [
      { key: 'model.norm.weight', dtype: 'F32', shape: [4] },
      { key: 'lm_head.weight', dtype: 'F32', shape: [16, 4] },
    ]);
    const again = client.nextDiagnostics(uri);
    client.notify('workspace/didChangeWatchedFiles', { changes: [{ uri: pathToFileURL(b).toString(), type: 2 }] });
    expect(await again).toEqual([]);
  });

  it('a burst of edits: only the newest version is checked and published', async () => {
    // A second server whose debounce never fires by itself: a request (hover) starts the
    // check of the current text at once, so the test needs no timer.
    const slow = await startInMemory({ initializationOptions: { debounceMs: 600_000 } });
    try {
      const { uri: u, text: base } = await slow.open(ws.specFile, ws.text(ws.spec()));
      const keyAt = base.indexOf('"key": "model.norm.weight"') + 8;
      for (let k = 0; k < 20; k++) slow.editNoWait(u, keyAt, keyAt, 'x');
      const diags = slow.nextDiagnostics(u);
      await slow.request('textDocument/hover', { textDocument: { uri: u }, position: positionOf(slow.text(u), keyAt + 2) });
      expect((await diags).map((d) => d.code)).toEqual(['key-missing']);
      expect(slow.text(u)).toContain(`"key": "${'x'.repeat(20)}model.norm.weight"`);
      expect(slow.published.filter((p) => p.uri === u).map((p) => p.version)).toEqual([1, 21]);
    } finally {
      slow.close();
    }
  });

  it('the specState request reports counts, files, ONNX and compile state', async () => {
    await client.replace(uri, ws.text(ws.spec()));
    const st = await client.request<Record<string, unknown>>(SpecStateRequest.method, { uri });
    expect(st).toMatchObject({
      uri,
      errors: 0,
      warnings: 0,
      inputs: 5,
      onnx: path.join(ws.dir, 'model.onnx'),
      compile: { state: 'never-compiled' },
    });
    expect((st.files as unknown[]).length).toBe(2);
  });

  it('stays quiet about a broken compile.json (never compiled)', async () => {
    writeFileSync(path.join(ws.dir, 'compile.json'), '{broken');
    const lenses = await client.request<CodeLens[]>('textDocument/codeLens', { textDocument: { uri } });
    expect(lenses.map((l) => l.command!.title)).toContain('Compile (never compiled)');
  });
});
