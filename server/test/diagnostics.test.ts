// Each diagnostic kind: a valid spec is edited (over LSP) into the faulty state; the test
// asserts the code, the exact range (the offending string) and the message. Each quick fix,
// applied, removes its diagnostic.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { CodeAction, Diagnostic } from 'vscode-languageserver-protocol';
import { SERVER_COMMANDS } from '../../core/src/protocol';
import { applyEdits, textOf, type TestClient } from './harness';
import { openWorkspace, preparedCopy, type makeWorkspace, type SpecJson } from './workspace';

describe('diagnostics and quick fixes', () => {
  let client: TestClient;
  let ws: ReturnType<typeof makeWorkspace>;
  let uri: string;

  beforeAll(async () => {
    ({ client, ws, uri } = await openWorkspace());
  });
  afterAll(() => client.close());
  // Every test starts from the valid document, whatever ran before (vitest --sequence.shuffle passes).
  beforeEach(async () => {
    expect(await client.replace(uri, ws.text(ws.spec()))).toEqual([]);
  });

  /** Edits the document to `mutate(valid spec)`; returns the diagnostics and the text. */
  async function faulty(mutate: (s: SpecJson) => void): Promise<{ text: string; diags: Diagnostic[] }> {
    const s = ws.spec();
    mutate(s);
    const text = ws.text(s);
    const diags = await client.replace(uri, text);
    return { text, diags };
  }
  const codes = (d: Diagnostic[]) => d.map((x) => String(x.code)).sort();
  async function fixes(d: Diagnostic): Promise<CodeAction[]> {
    return client.request<CodeAction[]>('textDocument/codeAction', {
      textDocument: { uri },
      range: d.range,
      context: { diagnostics: [d] },
    });
  }
  async function applyFix(a: CodeAction): Promise<Diagnostic[]> {
    const text = applyEdits(client.text(uri), a.edit!.changes![uri]!);
    return client.replace(uri, text);
  }

  it('the valid workspace spec has no diagnostics', async () => {
    expect(await client.replace(uri, ws.text(ws.spec()))).toEqual([]);
  });

  it('json-syntax and schema errors', async () => {
    const broken = ws.text(ws.spec()).replace('"model_name": "tiny"', '"model_name": "tiny",');
    const d1 = await client.replace(uri, broken);
    expect(d1.length).toBeGreaterThan(0);
    expect(new Set(codes(d1))).toEqual(new Set(['json-syntax']));
    expect(d1[0]!.message).toMatch(/^invalid JSON: /);
    const { text, diags } = await faulty((s) => (s.version = 'five'));
    expect(codes(diags)).toEqual(['schema']);
    expect(textOf(text, diags[0]!.range)).toBe('"five"');
    expect(diags[0]!.message).toMatch(/^version: /);
    expect(diags[0]!.severity).toBe(1);
  });

  it("QEfficient's forms: no version, a path in location.file — clean; a location-less input — a warning, not an error", async () => {
    // quic/efficient-transformers QEfficient/exporter/weight_free/weight_spec.py load_weight_spec
    const clean = await faulty((s) => {
      delete (s as Partial<SpecJson>).version;
      (s.inputs[0]!.location as { file: number | string }).file = s.files[0]!.path;
    });
    expect(clean.diags).toEqual([]);
    const { text, diags } = await faulty((s) => ((s.inputs[1] as { location: unknown }).location = null));
    // the skipped input leaves its graph input unmapped: also a warning, as QEfficient would not bind it either
    expect(codes(diags)).toEqual(['input-skipped', 'onnx-input-unmapped']);
    expect(diags.every((d) => d.severity === 2)).toBe(true);
    expect(textOf(text, diags.find((d) => d.code === 'input-skipped')!.range)).toBe('null');
  });

  it('file-missing on the path string', async () => {
    const { text, diags } = await faulty((s) => (s.files[1]!.path = 'ckpt/nope.safetensors'));
    expect(codes(diags)).toEqual(['file-missing']);
    expect(textOf(text, diags[0]!.range)).toBe('"ckpt/nope.safetensors"');
    expect(diags[0]!.message).toBe('file not found: ckpt/nope.safetensors');
  });

  it('file-not-safetensors on the path string', async () => {
    writeFileSync(path.join(ws.dir, 'ckpt', 'garbage.safetensors'), Buffer.from('this is not a safetensors file at all'));
    const { text, diags } = await faulty((s) => (s.files[1]!.path = 'ckpt/garbage.safetensors'));
    expect(codes(diags)).toEqual(['file-not-safetensors']);
    expect(textOf(text, diags[0]!.range)).toBe('"ckpt/garbage.safetensors"');
    expect(diags[0]!.message).toMatch(/^not a valid safetensors file \(.*\): ckpt\/garbage\.safetensors$/);
  });

  it('path-outside-root for a path leaving the spec directory', async () => {
    const { text, diags } = await faulty((s) => (s.files[1]!.path = '../../../etc/passwd'));
    expect(codes(diags)).toEqual(['path-outside-root']);
    expect(textOf(text, diags[0]!.range)).toBe('"../../../etc/passwd"');
  });

  it('file-index when location.file is out of range', async () => {
    const { text, diags } = await faulty((s) => (s.inputs[4]!.location.file = 7));
    expect(codes(diags)).toEqual(['file-index']);
    expect(textOf(text, diags[0]!.range)).toBe('7');
    expect(diags[0]!.message).toBe('inputs[4].location.file is 7 but the spec lists 2 files (valid: 0..1)');
  });

  it('key-missing with suggestions; the quick fix removes it', async () => {
    const { text, diags } = await faulty((s) => (s.inputs[1]!.location.key = 'model.layers.0.self_attn.q_prj.weight'));
    expect(codes(diags)).toEqual(['key-missing']);
    const d = diags[0]!;
    expect(textOf(text, d.range)).toBe('"model.layers.0.self_attn.q_prj.weight"');
    expect(d.message).toBe(
      'key "model.layers.0.self_attn.q_prj.weight" not found; did you mean "model.layers.0.self_attn.q_proj.weight" or "model.layers.0.self_attn.k_proj.weight"? (in ckpt/a.safetensors)',
    );
    const actions = await fixes(d);
    expect(actions.map((a) => a.title)).toEqual([
      'Change key to "model.layers.0.self_attn.q_proj.weight"',
      'Change key to "model.layers.0.self_attn.k_proj.weight"',
    ]);
    expect(await applyFix(actions[0]!)).toEqual([]);
  });

  it('key-in-other-file names the file; the quick fix changes location.file', async () => {
    const { text, diags } = await faulty((s) => (s.inputs[3]!.location.file = 0));
    expect(codes(diags)).toEqual(['key-in-other-file']);
    const d = diags[0]!;
    expect(textOf(text, d.range)).toBe('"model.norm.weight"');
    expect(text.slice(0, text.indexOf('"model.norm.weight"')).includes('"file": 0')).toBe(true);
    expect(d.message).toBe('key "model.norm.weight" is in files[1], not files[0]: set location.file to 1 (files[1] is ckpt/b.safetensors)');
    const actions = await fixes(d);
    expect(actions.map((a) => a.title)).toEqual(['Set location.file to 1 (ckpt/b.safetensors)']);
    expect(await applyFix(actions[0]!)).toEqual([]);
  });

  it('duplicate-name on the second name', async () => {
    const { text, diags } = await faulty((s) => (s.inputs[4]!.name = 'model.norm.weight'));
    // lm_head.weight is then unmapped in the graph and the renamed input's tensor has the
    // wrong shape for model.norm.weight, which the server also says.
    expect(codes(diags)).toEqual(['duplicate-name', 'onnx-input-unmapped', 'shape-mismatch']);
    const d = diags.find((x) => x.code === 'duplicate-name')!;
    expect(d.range.start.line).toBe(textOf(text, { start: { line: 0, character: 0 }, end: d.range.start }).split('\n').length - 1);
    expect(textOf(text, d.range)).toBe('"model.norm.weight"');
    expect(text.split('\n')[d.range.start.line]).toContain('"name": "model.norm.weight"');
    expect(text.indexOf('"name": "model.norm.weight"')).toBeLessThan(text.lastIndexOf('"name": "model.norm.weight"'));
    expect(d.message).toBe('duplicate input name "model.norm.weight" (first used by inputs[3])');
  });

  it('name-not-in-onnx with suggestions; the quick fix removes it', async () => {
    const { text, diags } = await faulty((s) => (s.inputs[3]!.name = 'model.norm.weigth'));
    expect(codes(diags)).toEqual(['name-not-in-onnx', 'onnx-input-unmapped']);
    const d = diags.find((x) => x.code === 'name-not-in-onnx')!;
    expect(textOf(text, d.range)).toBe('"model.norm.weigth"');
    expect(d.message).toBe('"model.norm.weigth" is not a graph input; did you mean "model.norm.weight"? (model.onnx)');
    const actions = await fixes(d);
    expect(actions[0]!.title).toBe('Change name to "model.norm.weight"');
    expect(await applyFix(actions[0]!)).toEqual([]);
  });

  it('onnx-input-unmapped (warning) for a graph weight input without entry', async () => {
    const { text, diags } = await faulty((s) => s.inputs.splice(4, 1));
    expect(codes(diags)).toEqual(['onnx-input-unmapped']);
    expect(diags[0]!.severity).toBe(2);
    expect(textOf(text, diags[0]!.range)).toBe('"inputs"');
    expect(diags[0]!.message).toBe('graph input "lm_head.weight" has no entry in the spec: the compiler cannot bind it (model.onnx)');
  });

  it('shape-mismatch between graph input and checkpoint tensor', async () => {
    const { text, diags } = await faulty((s) => (s.inputs[1]!.location.key = 'model.layers.0.self_attn.k_proj.weight'));
    expect(codes(diags)).toEqual(['shape-mismatch']);
    expect(diags[0]!.severity).toBe(1);
    expect(textOf(text, diags[0]!.range)).toBe('"model.layers.0.self_attn.k_proj.weight"');
    expect(text.split('\n')[diags[0]!.range.start.line + 2]).toContain('model.layers.0.self_attn.q_proj.weight');
    expect(diags[0]!.message).toBe(
      'shape mismatch: "model.layers.0.self_attn.k_proj.weight" is [2, 4], the graph input "model.layers.0.self_attn.q_proj.weight" is [4, 4] (model.onnx)',
    );
  });

  it('dtype-mismatch (warning) names the prepare --dtype that fixes it', async () => {
    const { text, diags } = await faulty((s) => (s.inputs[0]!.location.key = 'model.embed_tokens.weight.f16'));
    expect(codes(diags)).toEqual(['dtype-mismatch']);
    expect(diags[0]!.severity).toBe(2);
    expect(textOf(text, diags[0]!.range)).toBe('"model.embed_tokens.weight.f16"');
    expect(diags[0]!.message).toMatch(
      /^dtype mismatch: "model\.embed_tokens\.weight\.f16" is F16, the graph input "model\.embed_tokens\.weight" is F32; run Prepare with dtype float32 and point the spec at the prepared checkpoint \(`weight-spec prepare --checkpoint \S+ --dtype float32`; model\.onnx\)$/,
    );
  });

  it('not-prepared: a prepared directory that does not exist yet', async () => {
    const { text, diags } = await faulty((s) => (s.files[0]!.path = 'tiny-qeff-prepared-float32/a.safetensors'));
    expect(codes(diags)).toEqual(['not-prepared']);
    expect(textOf(text, diags[0]!.range)).toBe('"files"');
    expect(diags[0]!.message).toBe(
      'not prepared yet: the prepared checkpoint does not exist (1 of 2 shards missing); run Prepare (weight-spec prepare) to create it: tiny-qeff-prepared-float32/',
    );
  });

  it('not-prepared: every missing shard is one warning on "files" — one Problems row, no related row per shard — with the count and the Prepare quick fix (issues 36, 50)', async () => {
    const { text, diags } = await faulty((s) => {
      s.files[0]!.path = 'tiny-qeff-prepared-float32/model-00001-of-00002.safetensors';
      s.files[1]!.path = 'tiny-qeff-prepared-float32/model-00002-of-00002.safetensors';
    });
    expect(codes(diags)).toEqual(['not-prepared']);
    const d = diags[0]!;
    expect(textOf(text, d.range)).toBe('"files"');
    // The problem first, the short relative folder last.
    expect(d.message).toMatch(
      /^not prepared yet: .*\(all 2 shards missing\); run Prepare \(weight-spec prepare\) to create it: tiny-qeff-prepared-float32\/$/,
    );
    // VS Code lists each related entry as a row under the diagnostic: none, so one row.
    expect(d.relatedInformation).toBeUndefined();
    const actions = await fixes(d);
    expect(actions.map((a) => [a.title, a.command?.arguments, a.isPreferred])).toEqual([['Prepare the checkpoint', [uri], true]]);
    // The test client runs the server's own commands (no clientCommands): the server's Prepare.
    expect(actions[0]!.command!.command).toBe(SERVER_COMMANDS.prepare);
  });

  it('not-prepared: a 75-shard spec whose folder is not prepared is still one diagnostic without related rows (issue 50)', async () => {
    const { diags } = await faulty((s) => {
      s.files = Array.from({ length: 75 }, (_, i) => ({
        path: `big-qeff-prepared-float32/model-${String(i + 1).padStart(5, '0')}-of-00075.safetensors`,
      })) as SpecJson['files'];
    });
    expect(diags.map((d) => [d.code, d.relatedInformation])).toEqual([['not-prepared', undefined]]);
    expect(diags[0]!.message).toBe(
      'not prepared yet: the prepared checkpoint does not exist (all 75 shards missing); run Prepare (weight-spec prepare) to create it: big-qeff-prepared-float32/',
    );
  });

  it('prepared-incomplete: a prepared directory without its sentinel (unfinished prepare)', async () => {
    preparedCopy(ws.dir, 'half-qeff-prepared-float32', { sentinel: false });
    const { text, diags } = await faulty((s) => (s.files[0]!.path = 'half-qeff-prepared-float32/a.safetensors'));
    expect(codes(diags)).toEqual(['prepared-incomplete']);
    expect(textOf(text, diags[0]!.range)).toBe('"half-qeff-prepared-float32/a.safetensors"');
    expect(diags[0]!.message).toContain('no .checkpoint_prepared sentinel');
  });

  it('prepared-stale (warning) when the manifest no longer matches its source', async () => {
    preparedCopy(ws.dir, 'old-qeff-prepared-float32', { sentinel: true, sourceSize: 12345 });
    const { text, diags } = await faulty((s) => (s.files[0]!.path = 'old-qeff-prepared-float32/a.safetensors'));
    expect(codes(diags)).toEqual(['prepared-stale']);
    expect(diags[0]!.severity).toBe(2);
    expect(textOf(text, diags[0]!.range)).toBe('"old-qeff-prepared-float32/a.safetensors"');
    expect(diags[0]!.message).toMatch(
      /^the prepared checkpoint is stale \(source .*a\.safetensors changed size \(12345 → \d+ bytes\)\); run Prepare \(weight-spec prepare\) again: old-qeff-prepared-float32\/a\.safetensors$/,
    );
  });

  it('the same problems as `weight-spec check` (core checkSpec) for a faulty text', async () => {
    const { checkSpec } = await import('../../core/src/check');
    const { text, diags } = await faulty((s) => {
      s.inputs[1]!.location.key = 'model.layers.0.self_attn.q_prj.weight';
      s.inputs[3]!.location.file = 0;
      s.inputs[4]!.name = 'model.norm.weight';
    });
    const problems = await checkSpec(ws.specFile, text);
    expect(diags.map((d) => [d.code, d.message, textOf(text, d.range)])).toEqual(
      problems.map((p) => [p.code, p.message, p.range ? text.slice(p.range.start, p.range.end) : text.slice(0, 1)]),
    );
  });
});
