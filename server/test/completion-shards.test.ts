// Issue 50.3 over real JSON-RPC: key completion offers every shard's keys while typing (the
// `.` trigger), a key of another shard also sets `location.file`; property-name completion
// offers the weight spec schema's names only (no words from elsewhere).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompletionItem, CompletionList, TextEdit } from 'vscode-languageserver-protocol';
import path from 'node:path';
import { writeFileSync } from 'node:fs';
import { tempDir, writeTensors } from '../../core/test/support/check-helpers';
import { applyEdits, positionOf, startInMemory, type TestClient } from './harness';
import { makeWorkspace } from './workspace';

describe('completion across shards and of property names', () => {
  let client: TestClient;
  let ws: ReturnType<typeof makeWorkspace>;
  let uri: string;
  beforeAll(async () => {
    client = await startInMemory();
    ws = makeWorkspace();
    ({ uri } = await client.open(ws.specFile));
  });
  afterAll(() => client.close());

  const complete = (text: string, at: number, trigger?: string) =>
    client.request<CompletionList>('textDocument/completion', {
      textDocument: { uri },
      position: positionOf(text, at),
      ...(trigger ? { context: { triggerKind: 2, triggerCharacter: trigger } } : {}),
    });

  it('the server announces completion on "." (and on a quote), and definitions', () => {
    expect(client.initialized.capabilities.completionProvider?.triggerCharacters).toEqual(['"', '.']);
    expect(client.initialized.capabilities.definitionProvider).toBe(true);
  });

  it('after a typed ".", offers the keys of every shard that continue it; one of another shard sets location.file', async () => {
    const base = ws.text(ws.spec());
    // inputs[3] (model.norm.weight) is in files[1]; type "model.layers.0." as its key
    const start = base.indexOf('"key": "model.norm.weight"') + 8;
    const typed = base.slice(0, start) + 'model.layers.0.' + base.slice(start + 'model.norm.weight'.length);
    await client.replace(uri, typed);
    const at = start + 'model.layers.0.'.length;
    const list = await complete(typed, at, '.');
    const labels = list.items.map((i) => i.label).sort();
    expect(labels).toEqual(['model.layers.0.self_attn.k_proj.weight', 'model.layers.0.self_attn.q_proj.weight']); // files[0]'s keys
    const item = list.items.find((i) => i.label === 'model.layers.0.self_attn.q_proj.weight')!;
    expect(item.detail).toBe('F32 [4, 4] · files[0] (sets location.file)');
    // accepting it: the key, and "file": 1 → 0 in the same location object
    const out = applyEdits(typed, [item.textEdit as TextEdit, ...(item.additionalTextEdits ?? [])]);
    const input = JSON.parse(out).inputs[3] as { location: { file: number; key: string } };
    expect(input.location).toEqual({ file: 0, key: 'model.layers.0.self_attn.q_proj.weight' });
    await client.replace(uri, base);
  });

  it("past the list's cap, the input's own shard keeps its keys in it", async () => {
    const dir = tempDir('ws-lsp-cap-');
    // files[0]: 1,500 keys that match what is typed; files[1] (the input's): two more
    const many = Array.from({ length: 1500 }, (_, i) => ({ key: `model.layers.${i}.w`, dtype: 'F32', shape: [1] }));
    writeTensors(path.join(dir, 'a.safetensors'), many);
    writeTensors(path.join(dir, 'b.safetensors'), [
      { key: 'model.layers.own.w', dtype: 'F32', shape: [1] },
      { key: 'model.layers.own.v', dtype: 'F32', shape: [1] },
    ]);
    const spec = {
      files: ['a', 'b'].map((n) => ({ format: 'safetensors', path: `${n}.safetensors` })),
      inputs: [{ location: { file: 1, key: 'model.layers.' }, name: 'x' }],
      model_name: 'cap',
      version: 5,
    };
    const file = path.join(dir, 'weight_spec.json');
    const text = JSON.stringify(spec, null, 2);
    writeFileSync(file, text);
    const opened = await client.open(file);
    const at = text.indexOf('"key": "model.layers.') + 8 + 'model.layers.'.length;
    const list = await client.request<CompletionList>('textDocument/completion', {
      textDocument: { uri: opened.uri },
      position: positionOf(text, at),
    });
    expect(list.isIncomplete).toBe(true);
    const labels = list.items.map((i) => i.label);
    expect(labels).toContain('model.layers.own.w');
    expect(labels).toContain('model.layers.own.v');
  });

  it('property names: the schema names of the object the cursor is in, nothing else', async () => {
    const base = ws.text(ws.spec());
    const names = (l: CompletionList | null) => (l?.items ?? []).map((i: CompletionItem) => i.label).sort();
    // in inputs[0]'s location object, a new property being typed
    const loc = base.indexOf('"location": {') + '"location": {'.length;
    const inLoc = base.slice(0, loc) + '\n "k' + base.slice(loc);
    await client.replace(uri, inLoc);
    const l1 = await complete(inLoc, loc + 4);
    expect(names(l1)).toEqual(['file', 'key']);
    const key = l1.items.find((i) => i.label === 'key')!;
    expect(applyEdits(inLoc, [key.textEdit as TextEdit]).slice(loc, loc + 7)).toBe('\n "key"');
    // in an input object
    const inp = base.indexOf('{', base.indexOf('"inputs": [')) + 1;
    const inInput = base.slice(0, inp) + '\n "' + base.slice(inp);
    await client.replace(uri, inInput);
    const l2 = names(await complete(inInput, inp + 3));
    expect(l2).toContain('name');
    expect(l2).toContain('location');
    expect(l2).not.toContain('model.norm.weight'); // no words of the document
    // at the top level
    const top = base.indexOf('{') + 1;
    const atTop = base.slice(0, top) + '\n "' + base.slice(top);
    await client.replace(uri, atTop);
    const l3 = names(await complete(atTop, top + 3));
    for (const n of ['files', 'inputs', 'model_id', 'model_name', 'version']) expect(l3).toContain(n);
    expect(l3).not.toContain('key');
    await client.replace(uri, base);
  });
});
