// `inspect` and the language server's hover say when an exported graph carries CCL
// (comp_ctx_lengths) or QEfficient's on-device sampler — and say nothing of the kind for a plain
// graph. Exports are made by the built CLI from a config made here.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hover } from 'vscode-languageserver-protocol';
import { REPO_ROOT } from '../../test/support/fixtures';
import { tempDirs } from '../../test/support/temp';
import { SYNTHETIC_CONFIGS } from '../../core/test/support/graph-random';
import { positionOf, startInMemory, type TestClient } from './harness';

const tmp = tempDirs('ws-lsp-serving-');
const cli = (cwd: string, args: string[]) => {
  const r = spawnSync(process.execPath, [path.join(REPO_ROOT, 'dist', 'cli.js'), ...args], { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`weight-spec ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
};

describe('serving features in inspect and hover', () => {
  let root: string;
  let client: TestClient;
  const exportOf = (name: string, flags: string[]) => {
    const out = path.join(root, name);
    cli(root, ['export', '--config', path.join(root, 'mistral'), '--out', out, '--ctx-len', '32', ...flags]);
    return out;
  };
  beforeAll(async () => {
    root = tmp();
    fs.mkdirSync(path.join(root, 'mistral'));
    fs.writeFileSync(path.join(root, 'mistral', 'config.json'), JSON.stringify(SYNTHETIC_CONFIGS.mistral));
    client = await startInMemory();
  });
  afterAll(() => client?.close());

  it('inspect prints a line per feature (text and --json); none for a plain graph', () => {
    const served = exportOf('served', [
      '--comp-ctx-lengths-prefill',
      '16',
      '--comp-ctx-lengths-decode',
      '16,32',
      '--sampler',
      '--max-top-k',
      '40',
      '--return-pdfs',
    ]);
    const text = cli(root, ['inspect', path.join(served, 'model.onnx')]);
    expect(text).toContain('CCL: comp_ctx_lengths input; buckets prefill 16, decode 16,32');
    expect(text).toContain('on-device sampler: next_tokens + probs instead of logits; max_top_k_ids 40, vocab 96');
    const json = JSON.parse(cli(root, ['inspect', path.join(served, 'model.onnx'), '--json'])) as { serving?: string[] };
    expect(json.serving).toHaveLength(2);
    const plain = exportOf('plain', []);
    const plainText = cli(root, ['inspect', path.join(plain, 'model.onnx')]);
    expect(plainText).not.toMatch(/CCL:|sampler/);
    expect(
      (JSON.parse(cli(root, ['inspect', path.join(plain, 'model.onnx'), '--json'])) as { serving?: string[] }).serving,
    ).toBeUndefined();
    // only the sampler
    const sampled = exportOf('sampled', ['--sampler']);
    const s = cli(root, ['inspect', sampled]);
    expect(s).toContain('on-device sampler: next_tokens instead of logits; max_top_k_ids 96, vocab 96');
    expect(s).not.toContain('CCL:');
  });

  it("hover on a spec input of a CCL + sampler export names both features; a plain export's hover does not", async () => {
    const hoverOn = async (dir: string) => {
      const spec = path.join(dir, 'weight_spec.json');
      const { uri, text } = await client.open(spec);
      const at = text.indexOf('"name": "model.norm.weight"') + 11;
      const h = await client.request<Hover>('textDocument/hover', { textDocument: { uri }, position: positionOf(text, at) });
      return (h.contents as { value: string }).value;
    };
    const served = await hoverOn(
      exportOf('served-hover', ['--comp-ctx-lengths-prefill', '8', '--comp-ctx-lengths-decode', '16,32', '--sampler']),
    );
    expect(served).toContain('ONNX input `model.norm.weight` of `model.onnx`');
    expect(served).toContain('`model.onnx` serves with CCL: comp_ctx_lengths input; buckets prefill 8, decode 16,32');
    expect(served).toContain('`model.onnx` serves with on-device sampler: next_tokens instead of logits');
    const plain = await hoverOn(exportOf('plain-hover', []));
    expect(plain).toContain('ONNX input `model.norm.weight` of `model.onnx`');
    expect(plain).not.toContain('serves with');
  });
});
