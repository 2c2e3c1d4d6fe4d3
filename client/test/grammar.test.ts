// Tokenizes specs with vscode-textmate + vscode-oniguruma (the engine VS Code itself uses) and
// checks that input names, checkpoint keys and file paths get their own scopes.
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import * as oniguruma from 'vscode-oniguruma';
import * as vsctm from 'vscode-textmate';

const repo = path.resolve(__dirname, '..', '..');
let grammar: vsctm.IGrammar;

beforeAll(async () => {
  const wasm = fs.readFileSync(path.join(repo, 'node_modules', 'vscode-oniguruma', 'release', 'onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (s) => new oniguruma.OnigScanner(s),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scope) => {
      if (scope !== 'source.weight-spec') return null;
      const file = path.join(repo, 'syntaxes', 'weight-spec.tmLanguage.json');
      return vsctm.parseRawGrammar(fs.readFileSync(file, 'utf8'), file);
    },
  });
  grammar = (await registry.loadGrammar('source.weight-spec'))!;
});

/** Every token as [text, scopes]. */
function tokens(text: string): [string, string[]][] {
  let stack = vsctm.INITIAL;
  const out: [string, string[]][] = [];
  for (const line of text.split('\n')) {
    const r = grammar.tokenizeLine(line, stack);
    for (const t of r.tokens) out.push([line.slice(t.startIndex, t.endIndex), t.scopes]);
    stack = r.ruleStack;
  }
  return out;
}

const scopesOf = (toks: [string, string[]][], text: string) => toks.filter(([t]) => t === text).map(([, s]) => s);

describe('weight-spec grammar', () => {
  it('is registered in package.json for the weight-spec language', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8'));
    expect(pkg.contributes.grammars).toContainEqual({
      language: 'weight-spec',
      scopeName: 'source.weight-spec',
      path: './syntaxes/weight-spec.tmLanguage.json',
    });
    const lang = pkg.contributes.languages.find((l: { id: string }) => l.id === 'weight-spec');
    expect(lang.configuration).toBe('./syntaxes/language-configuration.json');
    expect(fs.existsSync(path.join(repo, lang.configuration))).toBe(true);
  });

  it('marks input names, checkpoint keys and paths (pretty-printed v5, as QEfficient writes it)', () => {
    const spec = JSON.stringify(
      {
        files: [{ format: 'safetensors', path: 'tiny-qeff-prepared-float32/base-0000.safetensors' }],
        inputs: [{ location: { file: 0, key: 'model.norm.weight' }, name: 'onnx::norm_w' }],
        model_id: '/abs/prepared',
        version: 5,
      },
      null,
      2,
    );
    const t = tokens(spec);
    expect(scopesOf(t, 'onnx::norm_w')[0]).toContain('entity.name.input.weight-spec');
    expect(scopesOf(t, 'model.norm.weight')[0]).toContain('variable.other.checkpoint-key.weight-spec');
    expect(scopesOf(t, 'tiny-qeff-prepared-float32/base-0000.safetensors')[0]).toContain('string.other.path.weight-spec');
    expect(scopesOf(t, '/abs/prepared')[0]).toContain('string.other.path.weight-spec');
    // An ordinary string value stays a plain JSON string; numbers stay numbers.
    const fmt = scopesOf(t, 'safetensors')[0]!;
    expect(fmt).toContain('string.quoted.double.json');
    expect(fmt.filter((s) => s.endsWith('.weight-spec') && s !== 'source.weight-spec')).toEqual([]);
    expect(scopesOf(t, '5')[0]).toContain('constant.numeric.json');
    expect(scopesOf(t, 'key')[0]).toContain('support.type.property-name.json');
  });

  it('handles compact one-line JSON, escapes and v1 checkpoint_files', () => {
    const t = tokens(
      '{"inputs":[{"name":"a\\"b","location":{"file":0,"key":"k.\\u0041"}}],"checkpoint_files":["x.safetensors","y.safetensors"],"weights_root":"w"}',
    );
    expect(scopesOf(t, 'a\\"b')[0] ?? scopesOf(t, 'a')[0]).toContain('entity.name.input.weight-spec');
    const key = t
      .filter(([, s]) => s.includes('variable.other.checkpoint-key.weight-spec'))
      .map(([x]) => x)
      .join('');
    expect(key).toBe('k.\\u0041');
    expect(scopesOf(t, 'x.safetensors')[0]).toContain('string.other.path.weight-spec');
    expect(scopesOf(t, 'y.safetensors')[0]).toContain('string.other.path.weight-spec');
    expect(scopesOf(t, 'w')[0]).toContain('string.other.path.weight-spec');
  });

  it('a "name" that is not a string value is not an input name', () => {
    const t = tokens('{"name": 3, "key": null}');
    expect(t.some(([, s]) => s.includes('entity.name.input.weight-spec'))).toBe(false);
    expect(scopesOf(t, '3')[0]).toContain('constant.numeric.json');
  });

  it('comments are not part of the format', () => {
    const t = tokens('{\n  // note\n  "version": 5\n}');
    expect(t.find(([x]) => x.includes('// note'))?.[1]).toContain('invalid.illegal.comment.weight-spec');
  });
});
