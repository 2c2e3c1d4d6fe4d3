// Checking a spec against its companion ONNX (a weight-free graph written here byte by byte).
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkSpec } from '../../src/check';
import { parseSpecText, specMetadataValue, SPEC_METADATA_KEY } from '../../src/spec';
import { ELEM, onnxBytes, rangeOf, tempDir, twoFileCheckpoint, type TestValue } from '../support/check-helpers';

/** Graph inputs matching the two-file checkpoint (all F32), plus the runtime inputs. */
function matchingInputs(): TestValue[] {
  return [
    { name: 'input_ids', elem: ELEM.INT64, dims: ['batch', 'seq'] },
    { name: 'position_ids', elem: ELEM.INT64, dims: ['batch', 'seq'] },
    { name: 'past_key.0', elem: ELEM.FLOAT, dims: ['batch', 2, 'ctx', 2] },
    { name: 'model.embed_tokens.weight', elem: ELEM.FLOAT, dims: [16, 4] },
    { name: 'model.layers.0.self_attn.q_proj.weight', elem: ELEM.FLOAT, dims: [4, 4] },
    { name: 'model.layers.0.self_attn.k_proj.weight', elem: ELEM.FLOAT, dims: [2, 4] },
    { name: 'model.norm.weight', elem: ELEM.FLOAT, dims: [4] },
    { name: 'lm_head.weight', elem: ELEM.FLOAT, dims: [16, 4] },
  ];
}
const outputs: TestValue[] = [{ name: 'logits', elem: ELEM.FLOAT, dims: ['batch', 'seq', 16] }];

function setup(inputs: TestValue[], specName = 'model.weight_spec.json', onnxName = 'model.onnx') {
  const dir = tempDir('ws-onnx-');
  const { spec } = twoFileCheckpoint(dir);
  writeFileSync(path.join(dir, onnxName), onnxBytes(inputs, outputs));
  const file = path.join(dir, specName);
  const text = JSON.stringify(spec, null, 2);
  writeFileSync(file, text);
  return { dir, file, text, spec };
}

describe('companion ONNX checks', () => {
  it('a spec matching its graph has no problems', async () => {
    const { file, text } = setup(matchingInputs());
    expect(await checkSpec(file, text)).toEqual([]);
  });

  it('names not in the graph, unmapped graph inputs, shape and dtype mismatches', async () => {
    const inputs = matchingInputs();
    inputs[4] = { name: 'model.layers.0.self_attn.q_proj.weight', elem: ELEM.FLOAT, dims: [4, 8] }; // shape differs
    inputs[5] = { name: 'model.layers.0.self_attn.k_proj.weight', elem: ELEM.FLOAT16, dims: [2, 4] }; // dtype differs
    inputs.push({ name: 'model.layers.0.mlp.up_proj.weight', elem: ELEM.FLOAT, dims: [8, 4] }); // not in the spec
    inputs[6] = { name: 'model.final_norm.weight', elem: ELEM.FLOAT, dims: [4] }; // spec says model.norm.weight
    const { file, text } = setup(inputs);
    const problems = await checkSpec(file, text);
    const byCode = Object.fromEntries(problems.map((p) => [p.code, p]));
    expect(problems.map((p) => p.code).sort()).toEqual(
      ['dtype-mismatch', 'name-not-in-onnx', 'onnx-input-unmapped', 'onnx-input-unmapped', 'shape-mismatch'].sort(),
    );
    // Ranges point at the spec text that is wrong: the key for tensor facts, the name for names.
    expect(byCode['shape-mismatch']!.range).toEqual(rangeOf(text, '"model.layers.0.self_attn.q_proj.weight"', 0));
    expect(byCode['shape-mismatch']!.message).toContain('[4, 8]');
    expect(byCode['dtype-mismatch']!.range).toEqual(rangeOf(text, '"model.layers.0.self_attn.k_proj.weight"', 0));
    expect(byCode['dtype-mismatch']!.message).toMatch(
      /^dtype mismatch: ".*" is F32, the graph input ".*" is F16; run Prepare with dtype float16 .*\(`weight-spec prepare --checkpoint \S+ --dtype float16`; model\.onnx\)$/,
    );
    expect(byCode['dtype-mismatch']!.data).toMatchObject({ expected: 'F16', actual: 'F32', prepareDtype: 'float16' });
    expect(byCode['name-not-in-onnx']!.range).toEqual(rangeOf(text, '"model.norm.weight"', 1));
    expect(byCode['name-not-in-onnx']!.message).toContain('did you mean "model.final_norm.weight"');
    const unmapped = problems
      .filter((p) => p.code === 'onnx-input-unmapped')
      .map((p) => p.data!.name)
      .sort();
    expect(unmapped).toEqual(['model.final_norm.weight', 'model.layers.0.mlp.up_proj.weight']);
    expect(problems.filter((p) => p.code === 'onnx-input-unmapped').every((p) => p.severity === 'warning')).toBe(true);
  });

  it("finds weight_spec.json's companion by its embedded spec", async () => {
    const dir = tempDir('ws-onnx-');
    const { spec } = twoFileCheckpoint(dir);
    const text = JSON.stringify(spec, null, 2);
    const file = path.join(dir, 'weight_spec.json');
    const embedded = specMetadataValue(parseSpecText(text, file).spec!);
    const bad = matchingInputs().filter((v) => v.name !== 'lm_head.weight');
    // a.onnx would report lm_head.weight missing; b.onnx embeds this spec and matches.
    writeFileSync(path.join(dir, 'a.onnx'), onnxBytes(bad, outputs));
    writeFileSync(path.join(dir, 'b.onnx'), onnxBytes(matchingInputs(), outputs, { [SPEC_METADATA_KEY]: embedded }));
    expect(await checkSpec(file, text)).toEqual([]);
    // With no embedded match and two candidates, no companion is guessed.
    writeFileSync(path.join(dir, 'b.onnx'), onnxBytes(matchingInputs(), outputs));
    expect(await checkSpec(file, text)).toEqual([]);
    // An explicit companion is always used.
    const explicit = await checkSpec(file, text, { onnx: path.join(dir, 'a.onnx') });
    expect(explicit.map((p) => p.code)).toEqual(['name-not-in-onnx']);
    // And can be switched off.
    expect(await checkSpec(file, text, { onnx: false })).toEqual([]);
  });

  it('a corrupt companion ONNX is one problem, not a crash', async () => {
    const { file, text, dir } = setup(matchingInputs());
    writeFileSync(path.join(dir, 'model.onnx'), Buffer.from('this is not protobuf at all \xff\xff\xff'));
    const problems = await checkSpec(file, text);
    expect(problems.map((p) => p.code)).toEqual(['onnx-unreadable']);
    expect(problems[0]!.message).toContain('model.onnx');
  });
});

describe('explicit companion', () => {
  it('a user-given --onnx outside the spec directory is used (only spec paths are confined)', async () => {
    const { file, text } = setup(matchingInputs());
    const other = tempDir('ws-onnx-other-');
    const model = path.join(other, 'elsewhere.onnx');
    writeFileSync(
      model,
      onnxBytes(
        matchingInputs().filter((v) => v.name !== 'model.norm.weight'),
        outputs,
      ),
    );
    const problems = await checkSpec(file, text, { onnx: model });
    expect(problems.map((p) => p.code)).toEqual(['name-not-in-onnx']);
    expect(problems[0]!.message).toContain('elsewhere.onnx');
  });
});
