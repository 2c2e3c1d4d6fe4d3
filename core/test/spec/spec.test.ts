// weight_spec model: QEfficient-exact v5 writing, every version's reader, offsets, ONNX embed.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FormatError } from '../../src/errors';
import { decodeModel, encodeModel } from '../../src/formats/onnx';
import {
  embedSpec,
  embedSpecInModel,
  extractSpec,
  extractSpecFromModel,
  parseSpecText,
  pyJsonDumps,
  readSpec,
  roleOf,
  SPEC_METADATA_KEY,
  specMetadataValue,
  writeSpec,
  writeSpecText,
  type WeightSpec,
} from '../../src/spec';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const tmpDir = tempDirs('ws-');

const samplePath = () => path.join(fixturesDir(), 'qeff-v5-llama.weight_spec.json');

describeFixtures('QEfficient v5 sample', () => {
  it('parses without problems and writes back byte-identical', () => {
    const bytes = readFileSync(samplePath());
    const text = bytes.toString('utf8');
    const parsed = parseSpecText(text, samplePath());
    expect(parsed.problems).toEqual([]);
    expect(parsed.spec!.inputs.length).toBe(21);
    const out = Buffer.from(writeSpecText(parsed.spec!), 'utf8');
    expect(out.equals(bytes)).toBe(true);
    // json.dump leaves no newline, and QEfficient adds none.
    expect(bytes[bytes.length - 1]).toBe('}'.charCodeAt(0));
  });

  it('metadata value is the compact sorted form of the same document', () => {
    const text = readFileSync(samplePath(), 'utf8');
    const spec = parseSpecText(text, 'x').spec!;
    // Independent reference: JSON.stringify of the key-sorted document (the sample is ASCII-only).
    const sortDeep = (v: unknown): unknown =>
      Array.isArray(v)
        ? v.map(sortDeep)
        : v && typeof v === 'object'
          ? Object.fromEntries(
              Object.keys(v)
                .sort()
                .map((k) => [k, sortDeep((v as Record<string, unknown>)[k])]),
            )
          : v;
    expect(specMetadataValue(spec)).toBe(JSON.stringify(sortDeep(JSON.parse(text))));
    expect(specMetadataValue(spec)).not.toMatch(/\s/);
  });

  it('offsets point at the exact source text of each key', () => {
    const text = readFileSync(samplePath(), 'utf8');
    const parsed = parseSpecText(text, 'x');
    const r = parsed.offsets.value(['inputs', 20, 'location', 'key'])!;
    expect(text.slice(r.start, r.end)).toBe('"lm_head.weight"');
    expect(text.lastIndexOf('"lm_head.weight"', text.indexOf('"name": "lm_head.weight"'))).toBe(r.start);
  });
});

describe('Python json.dumps emulation', () => {
  // Expected strings produced by CPython 3 json.dumps(v, indent=2 | separators=(",",":"), sort_keys=True).
  const value = {
    b: [1e-5, 0.1, 123.456, -0.0001, 2.5, 1e-7, 12345678.9, 0.5e-4, 3, -7, 0.30000000000000004, 1.7976931348623157e-300, 9007199254740.5],
    a: { z: [], y: {}, x: 'caf\u00e9 \u{1F600} \u2028 \x00\x1f\x7f "q" \\ / \t\n\r\b\f' },
    '\uffff': 1,
    '\u{1F600}': 2,
    '\u00e9': 3,
    A: true,
    n: null,
  };
  it('indent=2, sort_keys=True', () => {
    const expected =
      '{\n  "A": true,\n  "a": {\n    "x": "caf\\u00e9 \\ud83d\\ude00 \\u2028 \\u0000\\u001f\\u007f \\"q\\" \\\\ / \\t\\n\\r\\b\\f",\n    "y": {},\n    "z": []\n  },\n  "b": [\n    1e-05,\n    0.1,\n    123.456,\n    -0.0001,\n    2.5,\n    1e-07,\n    12345678.9,\n    5e-05,\n    3,\n    -7,\n    0.30000000000000004,\n    1.7976931348623157e-300,\n    9007199254740.5\n  ],\n  "n": null,\n  "\\u00e9": 3,\n  "\\uffff": 1,\n  "\\ud83d\\ude00": 2\n}';
    expect(pyJsonDumps(value, { indent: 2, sortKeys: true })).toBe(expected);
  });
  it('compact separators', () => {
    const expected =
      '{"A":true,"a":{"x":"caf\\u00e9 \\ud83d\\ude00 \\u2028 \\u0000\\u001f\\u007f \\"q\\" \\\\ / \\t\\n\\r\\b\\f","y":{},"z":[]},"b":[1e-05,0.1,123.456,-0.0001,2.5,1e-07,12345678.9,5e-05,3,-7,0.30000000000000004,1.7976931348623157e-300,9007199254740.5],"n":null,"\\u00e9":3,"\\uffff":1,"\\ud83d\\ude00":2}';
    expect(pyJsonDumps(value, { separators: [',', ':'], sortKeys: true })).toBe(expected);
  });
});

describe('reading older and newer versions', () => {
  it('v1: string checkpoint_files, fqn/kind/shape/dtype, tied_weights', () => {
    const text = JSON.stringify({
      version: 1,
      model_name: 'm',
      checkpoint_files: ['model.safetensors'],
      tied_weights: { 'lm_head.weight': 'model.embed_tokens.weight' },
      inputs: [
        { name: 'model.embed_tokens.weight', fqn: 'model.embed_tokens.weight', kind: 'parameter', shape: [8, 4], dtype: 'float32' },
        { fqn: 'lm_head.weight', kind: 'parameter', shape: [8, 4], dtype: 'float32' },
      ],
    });
    const p = parseSpecText(text, 'v1.json');
    expect(p.problems).toEqual([]);
    const s = p.spec!;
    expect(s.version).toBe(1);
    expect(s.files).toEqual([{ path: 'model.safetensors', format: 'safetensors' }]);
    expect(s.inputs[0]!.location).toEqual({ file: 0, key: 'model.embed_tokens.weight' });
    expect(s.inputs[1]!.name).toBe('lm_head.weight');
    expect(s.inputs[1]!.location).toEqual({ file: 0, key: 'model.embed_tokens.weight' });
    expect(s.inputs[1]!.shape).toEqual([8, 4]);
    expect(s.checkpoint_files).toBeUndefined();
    // The key of the tied input comes from its fqn: diagnostics point there.
    const src = p.sources!.inputs.at(1)!;
    expect(src.key).toEqual(['inputs', 1, 'fqn']);
    expect(text.slice(p.offsets.value(src.key)!.start, p.offsets.value(src.key)!.end)).toBe('"lm_head.weight"');
    // Written as v5.
    const v5 = JSON.parse(writeSpecText(s));
    expect(v5.version).toBe(5);
    expect(v5.files).toEqual([{ format: 'safetensors', path: 'model.safetensors' }]);
  });

  it('v1 with several files and no file index marks the file unknown (-1)', () => {
    const text = JSON.stringify({ version: 1, checkpoint_files: ['a.safetensors', 'b.safetensors'], inputs: [{ fqn: 'w' }] });
    const s = parseSpecText(text, 'x').spec!;
    expect(s.inputs[0]!.location).toEqual({ file: -1, key: 'w' });
    expect(() => writeSpecText(s)).toThrow(/file index -1/);
  });

  it('v3: weights_root / checkpoint_base_dir are folded into the file paths', () => {
    for (const field of ['weights_root', 'checkpoint_base_dir']) {
      const text = JSON.stringify({
        version: 3,
        [field]: 'ckpt',
        checkpoint_files: ['model-00001.safetensors', '/abs/x.safetensors'],
        inputs: [{ name: 'w', location: { file: 1, key: 'k' } }],
      });
      const p = parseSpecText(text, 'v3.json');
      expect(p.problems).toEqual([]);
      expect(p.spec!.files.map((f) => f.path)).toEqual(['ckpt/model-00001.safetensors', '/abs/x.safetensors']);
      expect(p.spec![field]).toBeUndefined();
      expect(p.sources!.files[0]!.path).toEqual(['checkpoint_files', 0]);
    }
  });

  it('v4: CheckpointFile(path, format) objects', () => {
    const text = JSON.stringify({
      version: 4,
      files: [{ path: 'a.safetensors', format: 'safetensors' }],
      inputs: [{ name: 'w', location: { file: 0, key: 'k' } }],
      model_id: '/m',
    });
    const p = parseSpecText(text, 'v4.json');
    expect(p.problems).toEqual([]);
    expect(p.spec!.files).toEqual([{ path: 'a.safetensors', format: 'safetensors' }]);
    expect(p.sources!.files[0]!.path).toEqual(['files', 0, 'path']);
  });

  it('v5 extras: role (default weight), weight_input, metadata, and unknown fields survive', () => {
    const doc = {
      version: 5,
      files: [{ format: 'safetensors', path: 'a.safetensors' }],
      inputs: [
        { name: 'w', location: { file: 0, key: 'k' } },
        { name: 's', role: 'scale', weight_input: 'w', metadata: { group: 32 }, location: { file: 0, key: 'k_scale', x_extra: 1 } },
      ],
      future_field: { nested: [1, 2] },
    };
    const p = parseSpecText(JSON.stringify(doc), 'v5.json');
    expect(p.problems).toEqual([]);
    const s = p.spec!;
    expect(roleOf(s.inputs[0]!)).toBe('weight');
    expect(s.inputs[0]!.role).toBeUndefined();
    expect(roleOf(s.inputs[1]!)).toBe('scale');
    expect(s.inputs[1]!.weight_input).toBe('w');
    expect(JSON.parse(writeSpecText(s))).toEqual(doc);
  });

  it('v6: per-input quantization', () => {
    const q = {
      format: 'mxfp6_e2m3',
      block_size: 32,
      axis: 1,
      layout: 'inline_e8m0_fp6_lsb_v1',
      dequantized_axis_size: 64,
      logical_dtype: 'float16',
    };
    const doc = {
      version: 6,
      files: [{ format: 'safetensors', path: 'a.safetensors' }],
      inputs: [{ name: 'w', location: { file: 0, key: 'k' }, quantization: q }],
    };
    const p = parseSpecText(JSON.stringify(doc), 'v6.json');
    expect(p.problems).toEqual([]);
    expect(p.spec!.inputs[0]!.quantization).toEqual(q);
    const back = JSON.parse(writeSpecText(p.spec!));
    expect(back.version).toBe(6); // v5 readers could not honour the quantization
    expect(back.inputs[0].quantization).toEqual(q);
  });

  it('v6 quantization with a bad field is a schema problem on that field', () => {
    const text = JSON.stringify({
      version: 6,
      files: ['a'],
      inputs: [{ name: 'w', location: { file: 0, key: 'k' }, quantization: { format: 'mxfp6', block_size: 0 } }],
    });
    const p = parseSpecText(text, 'x');
    expect(p.spec).toBeUndefined();
    expect(p.problems).toHaveLength(1);
    expect(p.problems[0]!.path).toEqual(['inputs', 0, 'quantization', 'block_size']);
    expect(text.slice(p.problems[0]!.range!.start, p.problems[0]!.range!.end)).toBe('0');
  });

  it('a newer version is read with a warning', () => {
    const p = parseSpecText(JSON.stringify({ version: 9, files: ['a'], inputs: [] }), 'x');
    expect(p.spec).toBeDefined();
    expect(p.problems.map((x) => [x.code, x.severity])).toEqual([['spec-version', 'warning']]);
  });
});

describe('ONNX metadata embedding', () => {
  const spec: WeightSpec = {
    version: 5,
    files: [{ path: 'a.safetensors', format: 'safetensors' }],
    inputs: [{ name: 'w\u00e9', location: { file: 0, key: 'k' } }],
    model_name: 'm',
  };
  it('embeds compact sorted JSON under com.qti.aisw.extdata and extracts it back', () => {
    const props = [{ key: 'producer_note', value: 'x' }];
    const out = embedSpec(props, spec);
    expect(props).toHaveLength(1); // input not modified
    expect(out.map((p) => p.key)).toEqual(['producer_note', SPEC_METADATA_KEY]);
    expect(out[1]!.value).toBe(
      '{"files":[{"format":"safetensors","path":"a.safetensors"}],"inputs":[{"location":{"file":0,"key":"k"},"name":"w\\u00e9"}],"model_name":"m","version":5}',
    );
    const replaced = embedSpec(out, { ...spec, model_name: 'n' });
    expect(replaced).toHaveLength(2);
    expect(extractSpec(replaced, 'm.onnx')!.model_name).toBe('n');
    expect(extractSpec(props, 'm.onnx')).toBeUndefined();
  });
  it('a broken embedded spec is a FormatError naming the model file', () => {
    expect(() => extractSpec([{ key: SPEC_METADATA_KEY, value: '{"version":5' }], 'model.onnx')).toThrow(FormatError);
    expect(() => extractSpec([{ key: SPEC_METADATA_KEY, value: '[]' }], 'model.onnx')).toThrow(/model\.onnx/);
  });
});

describeFixtures('ONNX metadata embedding in a real model', () => {
  it('survives an ONNX encode/decode round trip (real codec, fixture model)', () => {
    const file = path.join(fixturesDir(), 'llama', 'legacy.onnx');
    const model = decodeModel(readFileSync(file), file);
    expect(extractSpecFromModel(model, file)).toBeUndefined();
    const spec: WeightSpec = {
      version: 5,
      files: [{ path: 'a.safetensors', format: 'safetensors' }],
      inputs: [{ name: 'w\u00e9', location: { file: 0, key: 'k' } }],
    };
    const withSpec = embedSpecInModel(model, spec);
    const back = decodeModel(encodeModel(withSpec), file);
    const entry = back.metadataProps!.find((p) => p.key === SPEC_METADATA_KEY)!;
    expect(entry.value).toBe(specMetadataValue(spec));
    expect(extractSpecFromModel(back, file)).toEqual(spec);
  });
});

describe('file I/O', () => {
  it('writeSpec is atomic and leaves no temp file; readSpec reads it back', async () => {
    const dir = tmpDir('ws-spec-');
    const file = path.join(dir, 'weight_spec.json');
    const spec: WeightSpec = {
      version: 5,
      files: [{ path: 'a.safetensors', format: 'safetensors' }],
      inputs: [{ name: 'w', location: { file: 0, key: 'k' } }],
    };
    writeFileSync(file, 'old');
    await writeSpec(file, spec);
    expect(readdirSync(dir)).toEqual(['weight_spec.json']);
    expect(readFileSync(file, 'utf8')).toBe(writeSpecText(spec));
    expect(await readSpec(file)).toEqual(spec);
  });
  it('readSpec raises one FormatError naming the file and byte', async () => {
    const dir = tmpDir('ws-spec-');
    const file = path.join(dir, 'bad.json');
    const text = '{"version": 5, "files": [], "inputs": [{"name": 3}]}';
    writeFileSync(file, text);
    await expect(readSpec(file)).rejects.toThrow(new RegExp(`bad\\.json: inputs\\[0\\]\\.name: .*\\(at byte ${text.indexOf('3}')}\\)`));
    await expect(readSpec(path.join(dir, 'missing.json'))).rejects.toThrow(FormatError);
    expect(existsSync(path.join(dir, 'missing.json'))).toBe(false);
  });
});

describe('hostile JSON', () => {
  it('"__proto__" is an ordinary property (kept, not a prototype switch)', () => {
    const text = '{"version": 5, "files": ["a"], "inputs": [], "__proto__": {"model_name": "evil"}}';
    const s = parseSpecText(text, 'x').spec!;
    expect(s.model_name).toBeUndefined();
    expect(Object.getPrototypeOf(s)).toBe(Object.prototype);
    expect(Object.prototype.hasOwnProperty.call(s, '__proto__')).toBe(true);
    expect(writeSpecText(s)).toContain('"__proto__": {\n    "model_name": "evil"\n  }');
  });
});
