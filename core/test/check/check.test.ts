// The shared spec checker against real files: the QEfficient sample and checkpoints made here.
import { mkdirSync, readFileSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkSpec, HeaderCache } from '../../src/check';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { rangeOf, tempDir, twoFileCheckpoint, writeTensors } from '../support/check-helpers';

const sample = () => path.join(fixturesDir(), 'qeff-v5-llama.weight_spec.json');

describeFixtures('the QEfficient v5 sample', () => {
  it('checks with no problems', async () => {
    expect(await checkSpec(sample(), readFileSync(sample(), 'utf8'))).toEqual([]);
  });

  it('a key changed to a name not in the checkpoint gives exactly one error on that string', async () => {
    const good = 'model.layers.0.mlp.gate_proj.weight';
    const bad = 'model.layers.0.mlp.gate_prj.weight';
    const original = readFileSync(sample(), 'utf8');
    const keyText = `"key": "${good}"`;
    const at = original.indexOf(keyText);
    expect(at).toBeGreaterThan(0);
    const edited = original.slice(0, at) + `"key": "${bad}"` + original.slice(at + keyText.length);
    const problems = await checkSpec(sample(), edited);
    expect(problems).toHaveLength(1);
    const p = problems[0]!;
    expect(p.severity).toBe('error');
    expect(p.code).toBe('key-missing');
    const start = edited.indexOf(`"${bad}"`);
    expect(p.range).toEqual({ start, end: start + bad.length + 2 });
    expect(edited.slice(p.range!.start, p.range!.end)).toBe(`"${bad}"`);
    expect(p.message).toContain(`"${bad}"`);
    expect(p.message).toContain(`did you mean "${good}"`);
    expect((p.data!.suggestions as string[])[0]).toBe(good);
    expect(p.path).toEqual(['inputs', 7, 'location', 'key']);
  });

  it('a key in the other shard is key-in-other-file naming that file', async () => {
    const original = readFileSync(sample(), 'utf8');
    // model.norm.weight lives in shard 2 (file 1); point it at file 0.
    const from = '"file": 1,\n        "key": "model.norm.weight"';
    const edited = original.replace(from, '"file": 0,\n        "key": "model.norm.weight"');
    expect(edited).not.toBe(original);
    const problems = await checkSpec(sample(), edited);
    expect(problems.map((p) => [p.code, p.data])).toEqual([['key-in-other-file', { file: 1 }]]);
    expect(problems[0]!.range).toEqual(rangeOf(edited, '"model.norm.weight"', 0));
  });
});

describe('checks against checkpoints made here', () => {
  const setup = () => {
    const dir = tempDir();
    const { spec } = twoFileCheckpoint(dir);
    const file = path.join(dir, 'weight_spec.json');
    return { dir, spec, file };
  };
  const text = (o: unknown) => JSON.stringify(o, null, 2);

  it('a valid spec has no problems', async () => {
    const { spec, file } = setup();
    expect(await checkSpec(file, text(spec))).toEqual([]);
  });

  it('missing file, not-safetensors file, unreadable header', async () => {
    const { dir, spec, file } = setup();
    writeFileSync(path.join(dir, 'ckpt', 'b.safetensors'), Buffer.from('\x10\x00\x00\x00\x00\x00\x00\x00{"x": 1}'));
    const s = structuredClone(spec) as { files: { path: string }[] };
    s.files[0]!.path = 'ckpt/nope.safetensors';
    const t = text(s);
    const problems = await checkSpec(file, t);
    expect(problems.map((p) => p.code)).toEqual(['file-missing', 'file-not-safetensors']);
    expect(problems[0]!.range).toEqual(rangeOf(t, '"ckpt/nope.safetensors"'));
    expect(problems[1]!.range).toEqual(rangeOf(t, '"ckpt/b.safetensors"'));
    expect(problems[1]!.message).toMatch(/^not a valid safetensors file \(.*\): ckpt\/b\.safetensors$/);
    // The problem first, the short relative path last (issue 36).
    expect(problems[0]!.message).toBe('file not found: ckpt/nope.safetensors');
  });

  it('paths that leave the allowed roots are refused; --root admits them', async () => {
    const { dir, spec } = setup();
    const sub = path.join(dir, 'sub');
    mkdirSync(sub);
    const file = path.join(sub, 'weight_spec.json');
    const s = structuredClone(spec) as { files: { path: string }[] };
    s.files[0]!.path = '../ckpt/a.safetensors';
    s.files[1]!.path = path.join(dir, 'ckpt', 'b.safetensors');
    const t = text(s);
    const refused = await checkSpec(file, t);
    expect(refused.map((p) => p.code)).toEqual(['path-outside-root', 'path-outside-root']);
    expect(refused[0]!.range).toEqual(rangeOf(t, '"../ckpt/a.safetensors"'));
    expect(await checkSpec(file, t, { roots: [dir] })).toEqual([]);
  });

  it('a symlinked checkpoint directory inside the root is followed (QEfficient layout)', async () => {
    const { dir, spec } = setup();
    const exp = path.join(dir, 'export');
    mkdirSync(exp);
    symlinkSync(path.join(dir, 'ckpt'), path.join(exp, 'ckpt'));
    expect(await checkSpec(path.join(exp, 'weight_spec.json'), text(spec))).toEqual([]);
  });

  it('duplicate names, file index out of range, key-missing with suggestions', async () => {
    const { spec, file } = setup();
    const s = structuredClone(spec) as { inputs: { name: string; location: { file: number; key: string } }[] };
    s.inputs[2]!.name = s.inputs[1]!.name;
    s.inputs[3]!.location.file = 5;
    s.inputs[4]!.location.key = 'lm_head.weights';
    const t = text(s);
    const problems = await checkSpec(file, t);
    expect(problems.map((p) => p.code)).toEqual(['duplicate-name', 'file-index', 'key-missing']);
    expect(problems[0]!.range).toEqual(rangeOf(t, '"model.layers.0.self_attn.q_proj.weight"', 2));
    expect(problems[0]!.data).toEqual({ first: 1 });
    const fileField = rangeOf(t, '"file": 5');
    expect(problems[1]!.range).toEqual({ start: fileField.end - 1, end: fileField.end });
    expect(problems[1]!.message).toContain('valid: 0..1');
    expect(problems[2]!.message).toBe('key "lm_head.weights" not found; did you mean "lm_head.weight"? (in ckpt/b.safetensors)');
  });

  it('a name used three times: each repeat names the first user', async () => {
    const { spec, file } = setup();
    const s = structuredClone(spec) as { inputs: { name: string }[] };
    s.inputs[3]!.name = s.inputs[1]!.name;
    s.inputs[4]!.name = s.inputs[1]!.name;
    const problems = await checkSpec(file, text(s));
    expect(problems.map((p) => [p.code, p.data, p.path])).toEqual([
      ['duplicate-name', { first: 1 }, ['inputs', 3, 'name']],
      ['duplicate-name', { first: 1 }, ['inputs', 4, 'name']],
    ]);
  });

  it('suggestions prefer a prefix variant, then the closest key with the same tail', async () => {
    const { spec, file } = setup();
    const s = structuredClone(spec) as { inputs: { location: { key: string } }[] };
    s.inputs[0]!.location.key = 'embed_tokens.weight'; // checkpoint says model.embed_tokens.weight
    s.inputs[1]!.location.key = 'model.layers.0.self_attn.v_proj.weight'; // q_proj and k_proj are 1 edit away
    const problems = await checkSpec(file, text(s));
    expect(problems.map((p) => (p.data!.suggestions as string[])[0])).toEqual([
      'model.embed_tokens.weight',
      'model.layers.0.self_attn.k_proj.weight',
    ]);
  });

  it('v1 declared shape and dtype are compared with the header', async () => {
    const { dir } = setup();
    const file = path.join(dir, 'v1.json');
    const v1 = {
      version: 1,
      checkpoint_files: ['ckpt/a.safetensors'],
      inputs: [
        { fqn: 'model.embed_tokens.weight', kind: 'parameter', shape: [16, 4], dtype: 'float32' },
        { fqn: 'model.layers.0.self_attn.q_proj.weight', kind: 'parameter', shape: [4, 8], dtype: 'torch.bfloat16' },
      ],
    };
    const t = text(v1);
    const problems = await checkSpec(file, t);
    expect(problems.map((p) => p.code)).toEqual(['shape-mismatch', 'declared-dtype-mismatch']);
    expect(problems[1]!.range).toEqual(rangeOf(t, '"torch.bfloat16"'));
    expect(problems[1]!.message).toContain('is F32');
  });

  it('prepared directories: missing sentinel, then stale source', async () => {
    const dir = tempDir();
    const src = writeTensors(path.join(dir, 'src', 'model.safetensors'), [{ key: 'w', dtype: 'BF16', shape: [2, 2] }]);
    const prep = path.join(dir, 'src-qeff-prepared-float32');
    writeTensors(path.join(prep, 'base-0000.safetensors'), [{ key: 'w', dtype: 'F32', shape: [2, 2] }]);
    const spec = {
      files: [{ format: 'safetensors', path: 'src-qeff-prepared-float32/base-0000.safetensors' }],
      inputs: [{ location: { file: 0, key: 'w' }, name: 'w' }],
      version: 5,
    };
    const file = path.join(dir, 'weight_spec.json');
    const t = text(spec);
    const r1 = await checkSpec(file, t);
    expect(r1.map((p) => p.code)).toEqual(['prepared-incomplete']);
    expect(r1[0]!.range).toEqual(rangeOf(t, '"src-qeff-prepared-float32/base-0000.safetensors"'));
    // A manifest in prepare's format (core/src/prepare/manifest.ts); the sentinel holds the fingerprint.
    const fingerprint = 'ab'.repeat(32);
    const out = path.join(prep, 'base-0000.safetensors');
    writeFileSync(
      path.join(prep, '.checkpoint_prepared.json'),
      JSON.stringify({
        version: 1,
        tool: 'weight-spec',
        source: path.join(dir, 'src'),
        target_dtype: 'float32',
        fingerprint,
        moe_prefill_flavour: null,
        expert_parallel: null,
        source_files: [{ path: 'model.safetensors', size: readFileSync(src).length, mtime_ms: 1000 }],
        transforms: [],
        tasks: [],
        output_files: [{ path: 'base-0000.safetensors', size: readFileSync(out).length }],
        sidecars: [],
        created_at: new Date(0).toISOString(),
      }),
    );
    writeFileSync(path.join(prep, '.checkpoint_prepared'), 'cd'.repeat(32));
    expect((await checkSpec(file, t)).map((p) => p.code)).toEqual(['prepared-incomplete']); // sentinel ≠ fingerprint
    writeFileSync(path.join(prep, '.checkpoint_prepared'), fingerprint);
    utimesSync(src, 1, 1); // mtime 1 s = 1000 ms: matches the manifest
    expect(await checkSpec(file, t)).toEqual([]);
    utimesSync(src, 50, 50);
    expect((await checkSpec(file, t)).map((p) => [p.code, p.severity])).toEqual([['prepared-stale', 'warning']]);
    // A missing prepared directory says to run prepare.
    const gone = text({ ...spec, files: [{ format: 'safetensors', path: 'other-qeff-prepared-float16/base-0000.safetensors' }] });
    const r3 = await checkSpec(file, gone);
    expect(r3.map((p) => [p.code, p.severity])).toEqual([['not-prepared', 'warning']]);
    expect(r3[0]!.message).toMatch(/weight-spec prepare/);
  });
});

describe('HeaderCache', () => {
  it('reuses a header until the file changes (size or mtime)', async () => {
    const dir = tempDir();
    const f = writeTensors(path.join(dir, 'a.safetensors'), [{ key: 'w', dtype: 'F32', shape: [2] }]);
    const cache = new HeaderCache();
    const h1 = await cache.header(f);
    expect(await cache.header(f)).toBe(h1);
    writeTensors(f, [
      { key: 'w', dtype: 'F32', shape: [2] },
      { key: 'v', dtype: 'F32', shape: [3] },
    ]);
    const h2 = await cache.header(f);
    expect(h2).not.toBe(h1);
    expect([...h2.tensors.keys()].sort()).toEqual(['v', 'w']);
  });
});
