// The cold-open fast paths (issue 7's benchmark) must not change any result: the zod fast
// path against zod itself, duplicate detection by counting against a key-by-key scan, and
// the deferred tree against an eagerly built one.
import fc from 'fast-check';
import { parseTree } from 'jsonc-parser';
import { describe, expect, it } from 'vitest';
import { nestingBeyond, ownKeyCount, scanJsonShape } from '../../src/formats/json-depth';
import { parseStrictJson } from '../../src/formats/safetensors';
import { parseSpecText } from '../../src/spec';
import { parseSpecSchema, plainInputsOf } from '../../src/spec/fast-schema';
import { normalize } from '../../src/spec/normalize';
import { SpecOffsets } from '../../src/spec/offsets';
import { SpecSchema } from '../../src/spec/schema';

/** Deep comparison that also compares key order (zod's output order is observable). */
const ordered = (v: unknown) => JSON.stringify(v);

type Parsed = ReturnType<typeof SpecSchema.safeParse>;
/**
 * parseSpecSchema's result `b` against zod's `a`: the same success, issues and document, key
 * order included, except inside inputs: a plain input's parsed object is kept as it is (its
 * fields in the file's order; nothing reads an input's field order), where zod makes a copy.
 */
function sameAsZod(b: Parsed, a: Parsed): void {
  expect(ordered([b.success, b.error?.issues])).toBe(ordered([a.success, a.error?.issues]));
  if (!a.success || !b.success) return expect(b.data).toEqual(a.data);
  const { inputs: ai, ...at } = a.data;
  const { inputs: bi, ...bt } = b.data;
  expect(ordered(bt)).toBe(ordered(at));
  expect(bi).toStrictEqual(ai);
}

const plainInput = (i: number) => ({ name: `n${i}`, location: { file: 0, key: `k${i}` } });

describe('parseSpecSchema equals SpecSchema.safeParse', () => {
  const variants: [string, unknown][] = [
    ['plain v5', { version: 5, files: [{ path: 'a', format: 'safetensors' }], inputs: [plainInput(0), plainInput(1)], model_name: 'm' }],
    [
      "QEfficient's sorted keys (location before name, key before file)",
      {
        files: [{ format: 'safetensors', path: 'a' }],
        inputs: [
          { location: { file: 0, key: 'k0' }, name: 'k0' },
          { location: { key: 'k1', file: 0 }, name: 'n1' },
        ],
        version: 5,
      },
    ],
    [
      'keys in another order + role',
      { inputs: [{ role: 'weight', location: { key: 'k', file: 2 }, name: 'n', weight_input: 'w' }], files: ['a'], version: 5 },
    ],
    ['unknown input field', { version: 5, files: ['a'], inputs: [plainInput(0), { ...plainInput(1), extra: [1] }] }],
    ['unknown location field', { version: 5, files: ['a'], inputs: [{ name: 'n', location: { file: 0, key: 'k', z: 1 } }] }],
    ['empty key', { version: 5, files: ['a'], inputs: [{ name: 'n', location: { file: 0, key: '' } }] }],
    ['negative file', { version: 5, files: ['a'], inputs: [{ name: 'n', location: { file: -1, key: 'k' } }] }],
    ['fractional file', { version: 5, files: ['a'], inputs: [{ name: 'n', location: { file: 0.5, key: 'k' } }] }],
    ['empty role', { version: 5, files: ['a'], inputs: [{ ...plainInput(0), role: '' }] }],
    ['bad top level and bad input', { version: 0, files: ['a'], inputs: [{ name: 'n', location: { file: 0, key: '' } }] }],
    ['bad top level only', { version: 'x', inputs: [plainInput(0)] }],
    ['v1 input', { version: 1, checkpoint_files: ['a'], inputs: [{ fqn: 'a.b', kind: 'weight', shape: [2], dtype: 'float32' }] }],
    ['inputs not an array', { version: 5, files: ['a'], inputs: { a: 1 } }],
    ['no inputs', { version: 5, files: ['a'] }],
    ['not an object', [1, 2]],
    [
      'inputs first, fields out of order',
      { inputs: [plainInput(0)], model_name: 'm', files: [{ format: 'safetensors', path: 'a' }, 'b'], version: 6 },
    ],
    ['a file entry with another field', { version: 5, files: [{ path: 'a', format: 'safetensors', sha: 'x' }], inputs: [plainInput(0)] }],
    ['an empty format', { version: 5, files: [{ path: 'a', format: '' }], inputs: [plainInput(0)] }],
    ['model_id not a string', { version: 5, files: ['a'], inputs: [plainInput(0)], model_id: 3 }],
    ['no files', { version: 5, inputs: [plainInput(0)] }],
    ['another top-level field', { version: 5, files: ['a'], inputs: [plainInput(0)], quantization_config: { bits: 4 } }],
  ];
  for (const [name, doc] of variants) {
    it(name, () => {
      const text = JSON.stringify(doc);
      const a = SpecSchema.safeParse(JSON.parse(text));
      const b = parseSpecSchema(JSON.parse(text));
      sameAsZod(b, a);
    });
  }

  it('own "__proto__" properties, top level and in an input', () => {
    for (const text of [
      '{"version":5,"files":["a"],"inputs":[{"name":"n","location":{"file":0,"key":"k"}}],"__proto__":{"x":1}}',
      '{"version":5,"files":["a"],"inputs":[{"name":"n","location":{"file":0,"key":"k"},"__proto__":{"x":1}}]}',
    ]) {
      const a = SpecSchema.safeParse(JSON.parse(text));
      const b = parseSpecSchema(JSON.parse(text));
      expect(ordered([b.success, b.data])).toBe(ordered([a.success, a.data]));
      expect(Object.keys(b.data as object)).toEqual(Object.keys(a.data as object));
    }
  });

  it('random documents around plain inputs (the top-level fast path)', () => {
    const value = fc.oneof(
      fc.string({ maxLength: 2 }),
      fc.integer({ min: -1, max: 6 }),
      fc.constant(2.5),
      fc.constant(null),
      fc.constant(9007199254740993),
    );
    // Mostly what the fast path takes (so that it is reached), sometimes anything.
    const mostly = <T>(good: fc.Arbitrary<T>) => fc.oneof({ weight: 4, arbitrary: good }, { weight: 1, arbitrary: value });
    const name = fc.string({ minLength: 1, maxLength: 2 });
    const fileEntry = fc.oneof(
      { weight: 2, arbitrary: name },
      { weight: 3, arbitrary: fc.record({ path: mostly(name), format: mostly(name) }, { requiredKeys: ['path'] }) },
      { weight: 2, arbitrary: fc.record({ format: mostly(name), path: mostly(name) }, { requiredKeys: [] }) },
      { weight: 1, arbitrary: fc.record({ path: name, extra: value }) },
      { weight: 1, arbitrary: value },
    );
    const doc = fc.record(
      {
        version: mostly(fc.integer({ min: -1, max: 7 })),
        files: mostly(fc.array(fileEntry, { maxLength: 3 })),
        model_id: mostly(fc.string({ maxLength: 2 })),
        model_name: mostly(fc.string({ maxLength: 2 })),
      },
      { requiredKeys: [] },
    );
    const rare = fc.oneof(
      { weight: 6, arbitrary: fc.constant({}) },
      {
        weight: 1,
        arbitrary: fc.record(
          { checkpoint_files: fc.array(name, { maxLength: 2 }), weights_root: value, extra: value, ['__proto__']: value },
          { requiredKeys: [] },
        ),
      },
    );
    let fast = 0;
    fc.assert(
      fc.property(doc, rare, fc.shuffledSubarray(['inputs', 'version', 'files', 'model_id', 'model_name', 'rare']), (d, r, order) => {
        const parts: Record<string, unknown> = { ...d, inputs: [plainInput(0), plainInput(1)] };
        // Fields in a random order, the rare ones together (JSON text, so "__proto__" is an own key).
        const text = `{${[...order, 'version', 'files', 'model_id', 'model_name', 'inputs', 'rare']
          .filter((k, i, all) => all.indexOf(k) === i)
          .flatMap((k) =>
            k === 'rare'
              ? Object.entries(r).map(([rk, rv]) => `${JSON.stringify(rk)}:${JSON.stringify(rv)}`)
              : k in parts
                ? [`${JSON.stringify(k)}:${JSON.stringify(parts[k])}`]
                : [],
          )
          .join(',')}}`;
        const a = SpecSchema.safeParse(JSON.parse(text));
        const b = parseSpecSchema(JSON.parse(text));
        if (a.success) fast++;
        sameAsZod(b, a);
      }),
      { numRuns: 1500 },
    );
    // Most valid documents took the fast path (each case above is one the generator reaches).
    expect(fast).toBeGreaterThan(150);
  });

  it('random input lists', () => {
    const field = fc.oneof(fc.string({ maxLength: 3 }), fc.integer({ min: -2, max: 3 }), fc.constant(0.5), fc.constant(null));
    const input = fc.record(
      { name: field, location: fc.record({ file: field, key: field }, { requiredKeys: [] }), role: field, extra: field },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(fc.array(input, { maxLength: 5 }), (inputs) => {
        const text = JSON.stringify({ version: 5, files: ['a'], inputs });
        const a = SpecSchema.safeParse(JSON.parse(text));
        const b = parseSpecSchema(JSON.parse(text));
        sameAsZod(b, a);
      }),
      { numRuns: 300 },
    );
  });
});

describe("normalize's plain-input path equals its general one", () => {
  // parse.ts hands normalize parseSpecSchema's copies of plain inputs as they are; the general
  // path (zod's copies, input by input) must give the same spec and the same source paths.
  const docs: [string, unknown][] = [
    ['names equal keys', { version: 5, files: ['a', { path: 'b', format: 'safetensors' }], inputs: [plainInput(0), plainInput(1)] }],
    [
      'other names, roles, weight inputs, extras',
      {
        model_name: 'm',
        files: [{ format: 'safetensors', path: 'a' }],
        inputs: [
          { name: 'x', location: { key: 'k0', file: 0 }, role: 'weight' },
          { location: { file: 0, key: 'k1' }, name: 'k1', weight_input: 'w' },
        ],
        version: 6,
        extra: { a: 1 },
      },
    ],
    ['no version, one input', { files: ['a'], inputs: [plainInput(7)] }],
    [
      "QEfficient's key order",
      { files: [{ format: 'safetensors', path: 'a' }], inputs: [{ location: { file: 0, key: 'k' }, name: 'k' }], version: 5 },
    ],
  ];
  for (const [name, doc] of docs) {
    it(name, () => {
      const raw = JSON.parse(JSON.stringify(doc)) as Record<string, unknown>;
      const plain = plainInputsOf(raw);
      expect(plain).toBeDefined();
      const fast = normalize(parseSpecSchema(raw, plain).data!, raw, true);
      const zod = SpecSchema.safeParse(JSON.parse(JSON.stringify(doc)));
      const general = normalize(zod.data!, raw, false);
      const { inputs: fastInputs, ...fastRest } = fast.spec;
      const { inputs: generalInputs, ...generalRest } = general.spec;
      expect(ordered(fastRest)).toBe(ordered(generalRest));
      // (an input's field order is the file's on the plain path: see sameAsZod)
      expect(fastInputs).toStrictEqual(generalInputs);
      expect(fast.skipped).toEqual(general.skipped);
      expect(ordered(fast.sources.files)).toBe(ordered(general.sources.files));
      expect(fast.sources.inputs.length).toBe(general.sources.inputs.length);
      for (let i = 0; i < general.sources.inputs.length; i++) {
        expect(ordered(fast.sources.inputs.at(i))).toBe(ordered(general.sources.inputs.at(i)));
      }
      // A name equal to its key is the key's own string in both.
      fast.spec.inputs.forEach((x, i) => expect(x.name === x.location.key).toBe(general.spec.inputs[i]!.name === x.location.key));
    });
  }
});

describe('duplicate detection by counting', () => {
  it('scanJsonShape finds the same depth as nestingBeyond', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('[', ']', '{', '}', '"', '\\', ':', 'a', ' '), { maxLength: 40 }),
        fc.integer({ min: 0, max: 4 }),
        (chars, max) => {
          const text = chars.join('');
          const shape = scanJsonShape(text, max);
          expect(shape.deepAt).toBe(nestingBeyond(text, max));
          if (shape.deepAt < 0) {
            // Reference count: a character-by-character walk.
            let colons = 0;
            let inStr = false;
            for (let i = 0; i < text.length; i++) {
              const c = text[i];
              if (inStr) {
                if (c === '\\') i++;
                else if (c === '"') inStr = false;
              } else if (c === '"') inStr = true;
              else if (c === ':') colons++;
            }
            expect(shape.properties).toBe(colons);
          }
        },
      ),
    );
  });

  it('property count equals own-key count exactly when no object repeats a key', () => {
    const cases: [string, boolean][] = [
      ['{"a":1,"b":{"c":":","d":[{"e":"x:y"}]}}', false],
      ['{"a:b":1,"c":"\\":"}', false],
      ['{"a":1,"a":2}', true],
      ['{"a":{"b":1,"b":1}}', true],
      ['[{"a":1},{"a":1}]', false],
      ['{"a":1,"\\u0061":2}', true],
      ['{"__proto__":1,"__proto__":2}', true],
      ['{"__proto__":{"a":1}}', false],
    ];
    for (const [text, dup] of cases) {
      expect(scanJsonShape(text, 100).properties !== ownKeyCount(JSON.parse(text)), text).toBe(dup);
    }
  });

  it('safetensors-style headers: duplicates rejected, offsets still reported', () => {
    expect(() => parseStrictJson('{"a":{"x":1,"x":2}}', 'f', 'header')).toThrow(/key "x" twice/);
    const ok = parseStrictJson('{"a":{"x":1},"b":2}', 'f', 'header');
    expect(ok.topLevel.get('b')).toBe(13);
    expect(ok.secondLevel.get('a')?.get('x')).toBe(6);
  });

  it('spec duplicates at any depth are still reported with their range', () => {
    const text = '{"version": 5, "files": ["a"], "inputs": [{"name": "n", "location": {"file": 0, "key": "k", "key": "k"}}]}';
    const parsed = parseSpecText(text, 'x.weight_spec.json');
    const dups = parsed.problems.filter((p) => p.message.includes('duplicate property'));
    expect(dups).toHaveLength(1);
    expect(dups[0]!.path).toEqual(['inputs', 0, 'location', 'key']);
    expect(text.slice(dups[0]!.range!.start, dups[0]!.range!.end)).toBe('"key"');
    expect(text.indexOf('"key"', text.indexOf('"key"') + 1)).toBe(dups[0]!.range!.start);
  });
});

/** Every path of a JSON value, plus a missing child of each container. */
function pathsOf(v: unknown, prefix: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(prefix);
  if (Array.isArray(v)) {
    v.forEach((x, i) => pathsOf(x, [...prefix, i], out));
    out.push([...prefix, v.length], [...prefix, 'x']);
  } else if (typeof v === 'object' && v !== null) {
    for (const k of Object.keys(v)) pathsOf((v as Record<string, unknown>)[k], [...prefix, k], out);
    out.push([...prefix, '\u0000missing'], [...prefix, 0]);
  }
  return out;
}

describe('compact offset index equals the jsonc tree', () => {
  it('value, key, anchor and nearest on random documents, before and after shifts', () => {
    const key = fc.oneof(fc.string({ maxLength: 4 }), fc.constantFrom('a', 'a"b', 'é', '\\', '/', '~', '__proto__', 'x:y'));
    const doc = fc.letrec((tie) => ({
      v: fc.oneof(
        { depthSize: 'small' },
        fc.string({ maxLength: 4 }),
        fc.integer(),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie('v'), { maxLength: 4 }),
        fc.dictionary(key, tie('v'), { maxKeys: 4 }),
      ),
    })).v;
    fc.assert(
      fc.property(doc, fc.constantFrom(undefined, 2, '\t'), (value, indent) => {
        const text = JSON.stringify(value, null, indent);
        if (text === undefined) return;
        const parsed = JSON.parse(text) as unknown;
        if (scanJsonShape(text, 1000).properties !== ownKeyCount(parsed)) return; // duplicates take the tree
        const ix = SpecOffsets.ofStrictJson(text);
        const tree = new SpecOffsets(parseTree(text));
        const paths = pathsOf(parsed);
        const same = () => {
          for (const p of paths) {
            expect(ix.value(p), JSON.stringify(p)).toEqual(tree.value(p));
            expect(ix.key(p)).toEqual(tree.key(p));
            expect(ix.anchor(p)).toEqual(tree.anchor(p));
            expect(ix.nearest(p)).toEqual(tree.nearest(p));
          }
        };
        same();
        // Shifts inside a string value, as patch.ts makes them; enough to force folding.
        const strings = paths.filter((p) => text[tree.value(p)?.start ?? -1] === '"' && tree.key(p)?.start !== tree.value(p)?.start);
        if (strings.length === 0) return;
        for (let k = 0; k < 300; k++) {
          const r = tree.value(strings[k % strings.length]!)!;
          const d = k % 3 === 0 ? -1 : 1;
          if (d < 0 && r.end - r.start < 3) continue;
          ix.shift(r.end - 1, d);
          tree.shift(r.end - 1, d);
        }
        same();
      }),
      { numRuns: 200 },
    );
  });
});

describe('deferred tree', () => {
  it('gives the offsets an eager tree gives, and parsed.tree is that tree', () => {
    const doc = { version: 5, files: [{ path: 'a.safetensors', format: 'safetensors' }], inputs: [0, 1, 2].map(plainInput) };
    const text = JSON.stringify(doc, null, 2);
    const parsed = parseSpecText(text, 'x.weight_spec.json');
    const eager = new SpecOffsets(parseTree(text));
    for (const p of [
      ['version'],
      ['files', 0, 'path'],
      ['inputs', 2],
      ['inputs', 1, 'location', 'key'],
      ['inputs', 9],
      ['nope'],
    ] as const) {
      expect(parsed.offsets.value(p)).toEqual(eager.value(p));
      expect(parsed.offsets.key(p)).toEqual(eager.key(p));
      expect(parsed.offsets.anchor(p)).toEqual(eager.anchor(p));
    }
    expect(parsed.tree?.type).toBe('object');
    expect(parsed.tree?.children?.[2]?.children?.[1]?.children?.[1]?.offset).toBe(eager.value(['inputs', 1])!.start);
    parsed.tree = undefined;
    expect(parsed.tree).toBeUndefined();
  });

  it('ranges shifted before the tree was built map like ranges shifted after', () => {
    const text = JSON.stringify({ version: 5, files: ['a'], inputs: [0, 1].map(plainInput) });
    const late = parseSpecText(text, 'x').offsets;
    const early = new SpecOffsets(parseTree(text));
    const at = text.indexOf('"k0"') + 2;
    late.shift(at, 3);
    early.shift(at, 3);
    expect(late.value(['inputs', 1, 'name'])).toEqual(early.value(['inputs', 1, 'name']));
    expect(late.value(['inputs', 0, 'location', 'key'])).toEqual(early.value(['inputs', 0, 'location', 'key']));
  });
});
