// The language server on specs our export writes for the dense families with their own key
// layouts (gemma2: four norms per layer under model.layers.N; codegen: transformer.h.N with a
// fused qkv_proj and a biased lm_head): zero diagnostics against the prepared checkpoint and
// the model.onnx, inputs grouped by layer in the outline, and hover on the fused qkv input
// naming its ONNX input and shape.
import { execFileSync } from 'node:child_process';
import { cpSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hover } from 'vscode-languageserver-protocol';
import { tempDir } from '../../core/test/support/check-helpers';
import { describeFixtures, fixturesDir, REPO_ROOT } from '../../test/support/fixtures';
import { positionOf, startInMemory, type TestClient } from './harness';
import { bundleServer } from './support';

const cli = (args: string[]) =>
  execFileSync(process.execPath, [path.join(REPO_ROOT, 'dist', 'cli.js'), ...args], { cwd: REPO_ROOT, stdio: 'pipe' }).toString();

type Sym = { name: string; detail?: string; children?: Sym[] };

describeFixtures('specs of the dense families in the language server', () => {
  let client: TestClient;
  let dir: string;
  beforeAll(async () => {
    await bundleServer(REPO_ROOT);
    dir = tempDir('ws-lsp-dense-');
    for (const fam of ['gemma2', 'codegen']) {
      // the prepared checkpoint lands beside its source: work on a copy (fixtures are read-only)
      cpSync(path.join(fixturesDir(), fam), path.join(dir, fam), { recursive: true });
      cli(['export', '--config', path.join(dir, fam), '--out', path.join(dir, `${fam}-exp`)]);
      cli(['prepare', '--checkpoint', path.join(dir, fam), '--dtype', 'float32']);
    }
    client = await startInMemory();
  });
  afterAll(() => client?.close());

  const cases: [string, string, string, number[]][] = [
    ['gemma2', 'model.layers.1.pre_feedforward_layernorm.weight', 'model.layers.0.self_attn.q_proj.weight', [128, 64]],
    ['codegen', 'transformer.h.1.mlp.fc_out.bias', 'transformer.h.0.attn.qkv_proj.weight', [192, 64]],
  ];
  for (const [fam, inLayer1, hoverName, shape] of cases) {
    describe(fam, () => {
      it('opens with zero diagnostics, the outline groups its keys by layer, hover shows the graph input', async () => {
        const { uri, text, diagnostics } = await client.open(path.join(dir, `${fam}-exp`, 'weight_spec.json'));
        expect(diagnostics).toEqual([]);
        const syms = await client.request<Sym[]>('textDocument/documentSymbol', { textDocument: { uri } });
        const groups = syms.find((s) => s.name === 'inputs')!.children!;
        expect(groups.map((g) => g.name)).toContain('layer 1');
        expect(groups.find((g) => g.name === 'layer 1')!.children!.map((c) => c.name)).toContain(inLayer1);
        const at = text.indexOf(`"name": "${hoverName}"`) + 11;
        const hover = await client.request<Hover>('textDocument/hover', { textDocument: { uri }, position: positionOf(text, at) });
        expect((hover.contents as { value: string }).value).toContain(
          `ONNX input \`${hoverName}\` of \`model.onnx\`: \`F32\` \`[${shape.join(', ')}]\``,
        );
      });
    });
  }
});
