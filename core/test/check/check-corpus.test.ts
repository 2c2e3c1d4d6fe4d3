// A table of malformed weight_spec.json documents: each must come back as problems with a
// stable code and a range over the offending text — never a throw, never a hang.
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkSpec } from '../../src/check';
import { parseSpecText } from '../../src/spec';
import { tempDir, twoFileCheckpoint, type TwoFileSpec } from '../support/check-helpers';

let dir = '';
let good: TwoFileSpec | Record<string, unknown> = {};
beforeAll(() => {
  dir = tempDir('ws-corpus-');
  good = twoFileCheckpoint(dir).spec;
});

/** The valid spec with `edit` applied to a deep copy. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const mutate = (edit: (s: any) => void) => () => {
  const s = structuredClone(good);
  edit(s);
  return JSON.stringify(s, null, 2);
};

interface Case {
  name: string;
  text: () => string;
  code: string;
  /** The exact source text the first problem of `code` must cover, when it has one. */
  covers?: string;
  severity?: 'error' | 'warning';
}

const cases: Case[] = [
  { name: 'empty file', text: () => '', code: 'json-syntax' },
  { name: 'not JSON at all', text: () => 'weights please', code: 'json-syntax' },
  { name: 'truncated document', text: () => '{"version": 5, "files": [', code: 'json-syntax' },
  { name: 'comment (JSON has none)', text: () => '// spec\n{"version": 5, "files": [], "inputs": []}', code: 'json-syntax' },
  { name: 'trailing comma', text: () => '{"version": 5, "files": [], "inputs": [],}', code: 'json-syntax' },
  { name: 'top level is an array', text: () => '[{"version": 5}]', code: 'schema', covers: '[' },
  { name: 'top level is a string', text: () => '"weight_spec"', code: 'schema', covers: '"weight_spec"' },
  { name: 'version is a string', text: mutate((s) => (s.version = '5')), code: 'schema', covers: '"5"' },
  { name: 'version is fractional', text: mutate((s) => (s.version = 5.5)), code: 'schema', covers: '5.5' },
  { name: 'version is null', text: mutate((s) => (s.version = null)), code: 'schema', covers: 'null' },
  { name: 'files missing', text: mutate((s) => delete s.files), code: 'schema' },
  { name: 'files is an object', text: mutate((s) => (s.files = { path: 'a' })), code: 'schema', covers: '"files"' },
  { name: 'files entry is a number', text: mutate((s) => (s.files[1] = 7)), code: 'schema', covers: '7' },
  { name: 'file path empty', text: mutate((s) => (s.files[0].path = '')), code: 'schema', covers: '""' },
  { name: 'inputs is an object', text: mutate((s) => (s.inputs = {})), code: 'schema', covers: '"inputs"' },
  { name: 'input is a string', text: mutate((s) => (s.inputs[2] = 'lm_head.weight')), code: 'schema', covers: '"lm_head.weight"' },
  { name: 'missing key field', text: mutate((s) => delete s.inputs[1].location.key), code: 'schema', covers: '"location"' },
  // QEfficient's load_weight_spec skips location-less inputs: a warning, not an error
  { name: 'missing location', text: mutate((s) => delete s.inputs[0].location), code: 'input-skipped', severity: 'warning' },
  { name: 'location is a list', text: mutate((s) => (s.inputs[0].location = [0, 'k'])), code: 'schema' },
  { name: 'name is a number', text: mutate((s) => (s.inputs[0].name = 42)), code: 'schema', covers: '42' },
  { name: 'negative file index', text: mutate((s) => (s.inputs[3].location.file = -1)), code: 'schema', covers: '-1' },
  // a string location.file is a path (QEfficient: Union[int, str]); this one is not on disk
  {
    name: 'file path in location.file, missing',
    text: mutate((s) => (s.inputs[3].location.file = '1')),
    code: 'file-missing',
    covers: '"1"',
  },
  { name: 'location.file is a boolean', text: mutate((s) => (s.inputs[3].location.file = true)), code: 'schema', covers: 'true' },
  { name: 'empty key', text: mutate((s) => (s.inputs[4].location.key = '')), code: 'schema', covers: '""' },
  { name: 'metadata not an object', text: mutate((s) => (s.inputs[0].metadata = [1])), code: 'schema', covers: '"metadata"' },
  {
    name: 'quantization without format',
    text: mutate((s) => (s.inputs[0].quantization = { block_size: 32 })),
    code: 'schema',
    covers: '"quantization"',
  },
  { name: 'bad file index', text: mutate((s) => (s.inputs[4].location.file = 9)), code: 'file-index', covers: '9' },
  { name: 'duplicate input names', text: mutate((s) => (s.inputs[4].name = 'model.norm.weight')), code: 'duplicate-name' },
  {
    name: 'key not in checkpoint',
    text: mutate((s) => (s.inputs[3].location.key = 'model.nrom.weight')),
    code: 'key-missing',
    covers: '"model.nrom.weight"',
  },
  { name: 'unsupported file format', text: mutate((s) => (s.files[0].format = 'pytorch')), code: 'file-format', covers: '"pytorch"' },
  {
    name: 'absolute path outside roots',
    text: mutate((s) => (s.files[0].path = '/etc/passwd')),
    code: 'path-outside-root',
    covers: '"/etc/passwd"',
  },
  {
    name: '.. escaping the spec directory',
    text: mutate((s) => (s.files[1].path = '../../x.safetensors')),
    code: 'path-outside-root',
    covers: '"../../x.safetensors"',
  },
  { name: 'NUL byte in a path', text: mutate((s) => (s.files[0].path = 'ckpt/a\u0000.safetensors')), code: 'path-invalid' },
  {
    name: 'missing checkpoint file',
    text: mutate((s) => (s.files[1].path = 'ckpt/c.safetensors')),
    code: 'file-missing',
    covers: '"ckpt/c.safetensors"',
  },
  {
    name: 'duplicate property',
    text: () => '{"version": 5, "version": 5, "files": [], "inputs": []}',
    code: 'duplicate-property',
    covers: '"version"',
    severity: 'warning',
  },
  { name: 'deep nesting', text: () => '['.repeat(20000) + ']'.repeat(20000), code: 'json-syntax' },
  { name: 'unterminated deep nesting', text: () => '{"a":'.repeat(20000), code: 'json-syntax' },
  { name: 'huge number version', text: mutate((s) => (s.version = 1e400)), code: 'schema' },
];

describe('malformed spec corpus', () => {
  it('has at least 12 cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(12);
  });

  it.each(cases)('$name → $code', async (c) => {
    const text = c.text();
    const file = path.join(dir, 'weight_spec.json');
    expect(() => parseSpecText(text, file)).not.toThrow();
    const problems = await checkSpec(file, text);
    const hit = problems.find((p) => p.code === c.code);
    expect(hit, JSON.stringify(problems)).toBeDefined();
    expect(hit!.severity).toBe(c.severity ?? 'error');
    expect(hit!.message.length).toBeGreaterThan(0);
    expect(hit!.message).not.toContain('\n');
    for (const p of problems) {
      expect(p.code).not.toBe('internal');
      expect(p.range).toBeDefined();
      expect(p.range!.start).toBeGreaterThanOrEqual(0);
      expect(p.range!.end).toBeLessThanOrEqual(text.length);
      expect(p.range!.end).toBeGreaterThanOrEqual(p.range!.start);
    }
    if (c.covers !== undefined) expect(text.slice(hit!.range!.start, hit!.range!.end)).toBe(c.covers);
  });
});
