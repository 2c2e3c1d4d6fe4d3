// The language server on the two specs a VLM export writes (Qwen3-VL-MoE fixture: vision/ and
// language/ over one prepared checkpoint): each opens with zero diagnostics against the
// prepared checkpoint and its own model.onnx, and hover on a fused-expert input shows the
// canonical [E, H, I] graph input.
import { execFileSync } from 'node:child_process';
import { cpSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Hover } from 'vscode-languageserver-protocol';
import { tempDir } from '../../core/test/support/check-helpers';
import { describeFixtures, fixturesDir, REPO_ROOT } from '../../test/support/fixtures';
import { positionOf, startInMemory, type TestClient } from './harness';
import { bundleServer } from './support';

const cli = (args: string[]) =>
  execFileSync(process.execPath, [path.join(REPO_ROOT, 'dist', 'cli.js'), ...args], { cwd: REPO_ROOT, stdio: 'pipe' }).toString();

describeFixtures('a VLM export (two specs) in the language server', () => {
  let client: TestClient;
  let dir: string;
  beforeAll(async () => {
    await bundleServer(REPO_ROOT);
    dir = tempDir('ws-lsp-vlm-');
    cpSync(path.join(fixturesDir(), 'qwen3_vl_moe'), path.join(dir, 'model'), { recursive: true });
    cli(['export', '--config', path.join(dir, 'model'), '--out', path.join(dir, 'out')]);
    cli(['prepare', '--checkpoint', path.join(dir, 'model'), '--dtype', 'float32']);
    client = await startInMemory();
  });
  afterAll(() => client?.close());

  it('vision/weight_spec.json and language/weight_spec.json open with zero diagnostics; hover shows the expert input', async () => {
    const v = await client.open(path.join(dir, 'out', 'vision', 'weight_spec.json'));
    expect(v.diagnostics.map((d) => d.message)).toEqual([]);
    const l = await client.open(path.join(dir, 'out', 'language', 'weight_spec.json'));
    expect(l.diagnostics.map((d) => d.message)).toEqual([]);
    const name = 'model.language_model.layers.0.mlp.moe_weights.gate';
    const at = l.text.indexOf(`"name": "${name}"`) + 11;
    const hover = await client.request<Hover>('textDocument/hover', { textDocument: { uri: l.uri }, position: positionOf(l.text, at) });
    expect((hover.contents as { value: string }).value).toContain(`ONNX input \`${name}\` of \`model.onnx\`: \`F32\` \`[8, 64, 48]\``);
  });
});
