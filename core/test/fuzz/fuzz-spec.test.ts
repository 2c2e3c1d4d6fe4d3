/**
 * Fuzzing the weight_spec parser: valid specs of every version, then text mutations (flips,
 * truncation, injected NaN/Infinity/huge numbers, lone surrogates, duplicate keys, deep
 * nesting, unicode keys). `parseSpecText` must answer every input with problems as data —
 * never an `internal` problem (a caught crash), never a range outside the text.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Problem } from '../../src/errors';
import { PROBLEM_SEVERITY } from '../../src/problem-codes';
import { parseSpecText } from '../../src/spec';
import { CASE_MS, runFuzz } from '../support/fuzz-harness';

const FILE = 'fuzz.weight_spec.json';

function check(text: string): ReturnType<typeof parseSpecText> {
  const t0 = performance.now();
  const r = parseSpecText(text, FILE);
  const ms = performance.now() - t0;
  if (ms > CASE_MS) throw new Error(`parse took ${ms.toFixed(0)} ms`);
  for (const p of r.problems) assertProblem(p, text);
  if (r.spec) {
    expect(r.problems.some((p) => p.severity === 'error')).toBe(false);
    for (const inp of r.spec.inputs) {
      expect(typeof inp.name).toBe('string');
      expect(Number.isInteger(inp.location.file)).toBe(true);
      expect(typeof inp.location.key).toBe('string');
    }
  }
  return r;
}

function assertProblem(p: Problem, text: string): void {
  if (p.code === 'internal') throw new Error(`parser crashed (reported as internal): ${p.message}`);
  if (p.severity !== PROBLEM_SEVERITY[p.code]) throw new Error(`${p.code} reported as ${p.severity}`);
  if (p.message.includes('\n')) throw new Error(`multi-line message: ${JSON.stringify(p.message)}`);
  if (p.range && !(p.range.start >= 0 && p.range.start <= p.range.end && p.range.end <= text.length)) {
    throw new Error(`range ${JSON.stringify(p.range)} outside text of length ${text.length}`);
  }
}

const key = fc.oneof(
  fc.constantFrom('model.embed_tokens.weight', 'lm_head.weight', 'model.layers.0.self_attn.q_proj.weight'),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
);
const filePath = fc.oneof(
  fc.constantFrom('base-0000.safetensors', 'prepared/base-0001.safetensors', '../x.safetensors', '/etc/passwd', 'a\u0000b', ''),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
);

/** Documents shaped like real specs of versions 1–6, with some wrong-typed fields. */
const specDoc = fc.oneof(
  fc.record({
    version: fc.oneof(fc.constantFrom(5, 4, 6, 3), fc.integer(), fc.double()),
    files: fc.array(fc.record({ path: filePath, format: fc.constantFrom('safetensors', 'bin', 'x') }), { maxLength: 3 }),
    inputs: fc.array(
      fc.record({
        name: key,
        location: fc.record({ file: fc.oneof(fc.nat(3), fc.integer(), fc.double()), key }),
        role: fc.option(fc.constantFrom('weight', 'bias', 'scale'), { nil: undefined }),
      }),
      { maxLength: 8 },
    ),
    model_name: fc.option(fc.string(), { nil: undefined }),
  }),
  fc.record({
    version: fc.constant(1),
    checkpoint_files: fc.array(filePath, { maxLength: 2 }),
    inputs: fc.array(
      fc.record({
        fqn: key,
        kind: fc.constant('weight'),
        shape: fc.array(fc.nat(), { maxLength: 3 }),
        dtype: fc.constantFrom('float32', 'bfloat16'),
      }),
      { maxLength: 5 },
    ),
    tied_weights: fc.option(fc.dictionary(key, key, { maxKeys: 2 }), { nil: undefined }),
  }),
  fc.jsonValue({ maxDepth: 4 }),
);

const INJECT = [
  'NaN',
  'Infinity',
  '-Infinity',
  '1e999',
  '-1e999',
  '1e-999',
  '"\\ud800"',
  '"\\udfff\\ud800"',
  '9007199254740993',
  '-0',
  '0x10',
  '"\u202e"',
  '\ufeff',
  '//c\n',
  '/*',
  ',',
  ']',
  '}',
  '{',
  '[',
  ':',
  '"',
];

/** String mutations of a serialized document. */
const mutatedText = specDoc.chain((doc) => {
  const text = JSON.stringify(doc, null, 2) ?? 'null';
  return fc.oneof(
    fc.constant(text),
    fc.nat(text.length).map((n) => text.slice(0, n)),
    fc.tuple(fc.nat(text.length), fc.constantFrom(...INJECT)).map(([i, s]) => text.slice(0, i) + s + text.slice(i)),
    fc.tuple(fc.nat(text.length), fc.nat(8), fc.constantFrom(...INJECT)).map(([i, n, s]) => text.slice(0, i) + s + text.slice(i + n)),
    fc
      .array(fc.tuple(fc.nat(Math.max(0, text.length - 1)), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })), {
        minLength: 1,
        maxLength: 6,
      })
      .map((edits) => {
        const a = [...text];
        for (const [i, c] of edits) if (a.length) a[i % a.length] = c;
        return a.join('');
      }),
    // Duplicate a property: repeat the first `"key": value,` line.
    fc.constant(text.replace(/\n(\s*"[^"\n]*": [^\n]*,)\n/, '\n$1\n$1\n')),
    fc.string({ unit: 'binary', maxLength: 200 }),
  );
});

describe('spec parser fuzz', () => {
  it('answers every mutated document with well-formed problems (seeded)', () => {
    let specs = 0;
    let rejected = 0;
    runFuzz('spec-mutations', 3000, mutatedText, (t) => {
      if (check(t).spec) specs++;
      else rejected++;
    });
    // The generator must reach both outcomes, or the campaign proves nothing.
    expect(specs).toBeGreaterThan(100);
    expect(rejected).toBeGreaterThan(100);
  });

  it('reports duplicate keys, NaN/Infinity and unicode keys as problems, not crashes', () => {
    const dup = '{"version": 5, "version": 5, "files": [], "inputs": []}';
    expect(check(dup).problems.map((p) => p.code)).toContain('duplicate-property');
    for (const lit of ['NaN', 'Infinity', '-Infinity']) {
      const r = check(`{"version": 5, "files": [], "inputs": [{"name": "a", "location": {"file": ${lit}, "key": "k"}}]}`);
      expect(r.spec).toBeUndefined();
      expect(r.problems.some((p) => p.severity === 'error')).toBe(true);
    }
    const big = check(
      '{"version": 5, "files": [{"path": "a", "format": "safetensors"}], "inputs": [{"name": "a", "location": {"file": 1e999, "key": "k"}}]}',
    );
    expect(big.spec).toBeUndefined();
    const uni = check(
      '{"version": 5, "files": [{"path": "模型.safetensors", "format": "safetensors"}], "inputs": [{"name": "\\ud800 ключ 🙂", "location": {"file": 0, "key": "\\u0000"}}]}',
    );
    expect(uni.spec?.inputs[0]?.location.key).toBe('\u0000');
  });

  it('accepts nesting just under the 1000-level limit (an unknown field is kept, no problem)', () => {
    for (const [o, c] of [
      ['[', ']'],
      ['{"a":', '}'],
    ]) {
      const r = check(`{"version": 5, "files": [], "inputs": [], "x": ${o!.repeat(990)}1${c!.repeat(990)}}`);
      expect(r.spec).toBeDefined();
      expect(r.problems).toEqual([]);
    }
  });

  for (const depth of [20_000, 200_000]) {
    it(`answers ${depth}-deep nesting with a problem, not a crash`, () => {
      for (const [o, c] of [
        ['[', ']'],
        ['{"a":', '}'],
      ]) {
        for (const text of [
          `{"version": 5, "files": [], "inputs": [], "x": ${o!.repeat(depth)}1${c!.repeat(depth)}}`,
          o!.repeat(depth) /* unterminated */,
        ]) {
          const r = check(text);
          expect(r.spec).toBeUndefined();
          expect(r.problems.map((p) => [p.code, p.severity])).toContainEqual(['json-syntax', 'error']);
        }
      }
    });
  }
});
