// The QEfficient sample spec and the llama fixture, opened by their real paths.
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeFixtures, fixturesDir } from '../../test/support/fixtures';
import { safetensorsHeaderJson } from './support';
import { positionOf, startInMemory, type TestClient } from './harness';

describeFixtures('QEfficient sample spec over the llama fixture', () => {
  let client: TestClient;
  const file = () => path.join(fixturesDir(), 'qeff-v5-llama.weight_spec.json');
  beforeAll(async () => {
    client = await startInMemory();
  });
  afterAll(() => client.close());

  it('opens with zero diagnostics', async () => {
    const { diagnostics } = await client.open(file());
    expect(diagnostics).toEqual([]);
  });

  it('hover on a key shows dtype BF16, its shape and its shard', async () => {
    const { uri, text } = await client.open(file());
    const key = 'model.layers.0.self_attn.q_proj.weight';
    const at = text.indexOf(`"key": "${key}"`) + 10;
    const hover = await client.request<{ contents: { value: string } }>('textDocument/hover', {
      textDocument: { uri },
      position: positionOf(text, at),
    });
    const header = safetensorsHeaderJson(path.join(fixturesDir(), 'llama', 'model-00001-of-00002.safetensors'));
    const t = header[key] as { dtype: string; shape: number[] };
    expect(t.dtype).toBe('BF16');
    expect(hover.contents.value).toContain('`BF16`');
    expect(hover.contents.value).toContain(`[${t.shape.join(', ')}]`);
    expect(hover.contents.value).toContain('model-00001-of-00002.safetensors');
  });

  it('inlay hints show dtype and shape after each key on screen', async () => {
    const { uri, text } = await client.open(file());
    const hints = await client.request<{ label: string; position: { line: number } }[]>('textDocument/inlayHint', {
      textDocument: { uri },
      range: { start: { line: 0, character: 0 }, end: positionOf(text, text.length) },
    });
    const inputs = (JSON.parse(text) as { inputs: unknown[] }).inputs.length;
    expect(hints).toHaveLength(inputs);
    expect(hints.every((h) => /^BF16 \[\d+(, \d+)*\]$/.test(h.label))).toBe(true);
  });

  it('formatting the sample (QEfficient bytes) changes nothing', async () => {
    const { uri } = await client.open(file());
    const edits = await client.request<unknown[]>('textDocument/formatting', {
      textDocument: { uri },
      options: { tabSize: 2, insertSpaces: true },
    });
    expect(edits).toEqual([]);
  });

  it('document symbols group the inputs by layer', async () => {
    const { uri, text } = await client.open(file());
    const syms = await client.request<{ name: string; children?: { name: string; children?: { name: string }[] }[] }[]>(
      'textDocument/documentSymbol',
      { textDocument: { uri } },
    );
    const inputs = syms.find((s) => s.name === 'inputs')!;
    const groups = inputs.children!.map((c) => c.name);
    expect(groups).toContain('layer 0');
    expect(groups).toContain('layer 1');
    const layer0 = inputs.children!.find((c) => c.name === 'layer 0')!.children!.map((c) => c.name);
    expect(layer0.every((n) => n.startsWith('model.layers.0.'))).toBe(true);
    const all = inputs.children!.flatMap((c) => c.children!.map((x) => x.name));
    expect(all.sort()).toEqual((JSON.parse(text) as { inputs: { name: string }[] }).inputs.map((i) => i.name).sort());
  });

  it('the outline groups do not overlap, so a layer-0 line has the breadcrumb "layer 0", not "other" (issue 19.6)', async () => {
    const { uri, text } = await client.open(file());
    type R = { start: { line: number }; end: { line: number } };
    type S = { name: string; range: R; children?: S[] };
    const syms = await client.request<S[]>('textDocument/documentSymbol', { textDocument: { uri } });
    const groups = syms.find((s) => s.name === 'inputs')!.children!;
    // The innermost group containing a layer-0 input's line, as the breadcrumb picks it.
    const line = positionOf(text, text.indexOf('"name": "model.layers.0.')).line;
    const around = groups.filter((g) => g.range.start.line <= line && line <= g.range.end.line);
    expect(around.map((g) => g.name)).toEqual(['layer 0']);
    // Inputs outside the layers (lm_head before them, model.norm after) are separate, numbered groups.
    const names = groups.map((g) => g.name);
    expect(names.filter((n) => n.startsWith('other'))).toEqual(['other (1)', 'other (2)']);
    for (let i = 1; i < groups.length; i++) expect(groups[i]!.range.start.line).toBeGreaterThan(groups[i - 1]!.range.end.line);
  });
});
