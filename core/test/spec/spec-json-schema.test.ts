// The published JSON Schema of weight_spec.json (core/src/spec/json-schema.ts, emitted by the
// build into dist/weight-spec.schema.json and contributed through package.json's
// jsonValidation). The project has no JSON Schema validator dependency, so the schema is
// applied here by a small validator of the draft-07 keywords it uses (any other keyword fails
// the test), and its verdict is compared with zod's (SpecSchema, what the parser uses) on the
// same documents: real specs from fixture exports must pass both, broken ones fail both.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { exportFromConfig } from '../../src/export/export-config';
import { SpecSchema } from '../../src/spec';
import { specJsonSchema } from '../../src/spec/json-schema';
import { configsDir, describeFixtures, fixturesDir, REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-schema-');
type S = Record<string, unknown>;
const KNOWN = new Set([
  '$schema',
  'title',
  'description',
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'additionalItems',
  'anyOf',
  'minLength',
  'minimum',
  'maximum',
  'minItems',
  'maxItems',
  'propertyNames',
]);

function typeOk(t: string, v: unknown): boolean {
  switch (t) {
    case 'object':
      return typeof v === 'object' && v !== null && !Array.isArray(v);
    case 'array':
      return Array.isArray(v);
    case 'string':
      return typeof v === 'string';
    case 'integer':
      return Number.isInteger(v);
    case 'number':
      return typeof v === 'number';
    case 'null':
      return v === null;
    case 'boolean':
      return typeof v === 'boolean';
    default:
      throw new Error(`type ${t} not handled by this validator`);
  }
}

/** Errors of `v` against draft-07 schema `s` (the keywords in KNOWN; anything else throws). */
function validate(s: S | boolean, v: unknown, at = '$'): string[] {
  if (s === true) return [];
  if (s === false) return [`${at}: not allowed`];
  for (const k of Object.keys(s)) if (!KNOWN.has(k)) throw new Error(`keyword ${k} at ${at} not handled by this validator`);
  const errs: string[] = [];
  if (s.type !== undefined && !typeOk(s.type as string, v)) return [`${at}: not ${s.type}`];
  if (s.anyOf && !(s.anyOf as S[]).some((x) => validate(x, v, at).length === 0)) errs.push(`${at}: matches none of anyOf`);
  if (typeof v === 'string') {
    if (s.minLength !== undefined && [...v].length < (s.minLength as number)) errs.push(`${at}: shorter than ${s.minLength}`);
  }
  if (typeof v === 'number') {
    if (s.minimum !== undefined && v < (s.minimum as number)) errs.push(`${at}: < ${s.minimum}`);
    if (s.maximum !== undefined && v > (s.maximum as number)) errs.push(`${at}: > ${s.maximum}`);
  }
  if (Array.isArray(v)) {
    if (s.minItems !== undefined && v.length < (s.minItems as number)) errs.push(`${at}: fewer than ${s.minItems} items`);
    if (s.maxItems !== undefined && v.length > (s.maxItems as number)) errs.push(`${at}: more than ${s.maxItems} items`);
    if (Array.isArray(s.items)) {
      v.forEach((x, i) => {
        const item = (s.items as S[])[i] ?? (s.additionalItems as S | boolean | undefined) ?? true;
        errs.push(...validate(item, x, `${at}[${i}]`));
      });
    } else if (s.items) v.forEach((x, i) => errs.push(...validate(s.items as S, x, `${at}[${i}]`)));
  }
  if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    for (const r of (s.required as string[] | undefined) ?? []) if (!(r in o)) errs.push(`${at}: missing ${r}`);
    const props = (s.properties ?? {}) as Record<string, S>;
    for (const [k, x] of Object.entries(o)) {
      if (s.propertyNames) errs.push(...validate(s.propertyNames as S, k, `${at}.${k} (name)`));
      if (k in props) errs.push(...validate(props[k]!, x, `${at}.${k}`));
      else if (s.additionalProperties !== undefined) errs.push(...validate(s.additionalProperties as S | boolean, x, `${at}.${k}`));
    }
  }
  return errs;
}

const schema = specJsonSchema();
const agree = (doc: unknown) => {
  const errs = validate(schema, doc);
  const zod = SpecSchema.safeParse(doc).success;
  return { schema: errs.length === 0, zod, errs };
};

describeFixtures('the weight spec JSON Schema accepts real specs', () => {
  it('the QEfficient v5 sample and the specs of fixture and full-size config exports', async () => {
    const docs: [string, unknown][] = [
      ['qeff-v5-llama', JSON.parse(fs.readFileSync(path.join(fixturesDir(), 'qeff-v5-llama.weight_spec.json'), 'utf8'))],
    ];
    for (const [name, config] of [
      ['llama', path.join(fixturesDir(), 'llama', 'config.json')],
      ['mixtral', path.join(fixturesDir(), 'mixtral', 'config.json')],
      ['qwen3-30b-a3b', path.join(configsDir(), 'qwen3-30b-a3b.json')],
    ] as const) {
      if (!fs.existsSync(config)) continue;
      const dir = tmp();
      fs.copyFileSync(config, path.join(dir, 'config.json'));
      await exportFromConfig({ config: dir, out: path.join(dir, 'out') });
      docs.push([name, JSON.parse(fs.readFileSync(path.join(dir, 'out', 'weight_spec.json'), 'utf8'))]);
    }
    expect(docs.length).toBeGreaterThanOrEqual(3);
    for (const [name, doc] of docs) expect(agree(doc), name).toEqual({ schema: true, zod: true, errs: [] });
  });
});

describe('the weight spec JSON Schema agrees with zod', () => {
  const good = {
    files: [{ format: 'safetensors', path: 'a.safetensors' }],
    inputs: [{ location: { file: 0, key: 'k' }, name: 'n' }],
    version: 5,
  };
  const cases: [string, unknown, boolean][] = [
    ['a v5 spec', good, true],
    [
      'a v1 spec: string checkpoint_files, fqn instead of name',
      { version: 1, checkpoint_files: ['a.safetensors'], inputs: [{ fqn: 'w', kind: 'weight', shape: [2, 3], dtype: 'float32' }] },
      true,
    ],
    [
      'location.file as a path (QEfficient allows it)',
      { ...good, inputs: [{ location: { file: 'a.safetensors', key: 'k' }, name: 'n' }] },
      true,
    ],
    [
      'a v6 quantized input',
      { ...good, version: 6, inputs: [{ ...good.inputs[0], quantization: { format: 'mxfp6_e2m3', block_size: 32, axis: -1 } }] },
      true,
    ],
    ['unknown fields are kept', { ...good, extra: { x: 1 }, inputs: [{ ...good.inputs[0], role: 'weight', something: [1] }] }, true],
    ['no inputs', { files: good.files, version: 5 }, false],
    ['neither files nor checkpoint_files', { inputs: good.inputs, version: 5 }, false],
    ['an input with neither name nor fqn', { ...good, inputs: [{ location: { file: 0, key: 'k' } }] }, false],
    ['a negative file index', { ...good, inputs: [{ location: { file: -1, key: 'k' }, name: 'n' }] }, false],
    ['an empty key', { ...good, inputs: [{ location: { file: 0, key: '' }, name: 'n' }] }, false],
    ['version 0', { ...good, version: 0 }, false],
    ['version 5.5', { ...good, version: 5.5 }, false],
    ['a file entry that is a number', { ...good, files: [7] }, false],
    ['a file without a path', { ...good, files: [{ format: 'safetensors' }] }, false],
    ['quantization without format', { ...good, inputs: [{ ...good.inputs[0], quantization: { block_size: 32 } }] }, false],
    ['tied_weights pairs of three', { ...good, tied_weights: [['a', 'b', 'c']] }, false],
    ['not an object', [good], false],
  ];
  for (const [title, doc, ok] of cases) {
    it(`${ok ? 'accepts' : 'rejects'} ${title}`, () => {
      const r = agree(doc);
      expect(r.zod, 'zod').toBe(ok);
      expect(r.schema, `schema: ${r.errs.join('; ')}`).toBe(ok);
    });
  }
});

describe('the schema the build emits and the manifest contributes', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8'));
  it('jsonValidation points the spec file patterns at the emitted file, which the .vsix allow-list ships', () => {
    const [entry] = pkg.contributes.jsonValidation;
    expect(entry.fileMatch).toEqual(['weight_spec.json', '*.weight_spec.json']);
    expect(entry.url).toBe('./dist/weight-spec.schema.json');
    // The language's patterns are the same files.
    const lang = pkg.contributes.languages.find((l: { id: string }) => l.id === 'weight-spec');
    expect([...lang.filenames, ...lang.filenamePatterns]).toEqual(entry.fileMatch);
    expect(fs.readFileSync(path.join(REPO_ROOT, '.vscodeignore'), 'utf8').split('\n')).toContain('!dist/weight-spec.schema.json');
  });
  const emitted = path.join(REPO_ROOT, 'dist', 'weight-spec.schema.json');
  it.skipIf(!fs.existsSync(emitted))('dist/weight-spec.schema.json is the generated schema (npm run build writes it)', () => {
    expect(JSON.parse(fs.readFileSync(emitted, 'utf8'))).toEqual(schema);
  });
});
