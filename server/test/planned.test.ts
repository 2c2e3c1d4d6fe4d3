// Issue 15.2 in the editor: before prepare, keys are checked against prepare's plan of the
// source checkpoint, and hover says what the plan holds instead of pointing at a diagnostic
// that does not exist. Over real JSON-RPC, on an export of the llama fixture.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Hover } from 'vscode-languageserver-protocol';
import { describeFixtures, fixturesDir, REPO_ROOT } from '../../test/support/fixtures';
import { tempDirs } from '../../test/support/temp';
import { positionOf, startInMemory, type TestClient } from './harness';

const tmp = tempDirs('ws-srv-planned-');

describeFixtures('the server before prepare', () => {
  let client: TestClient;
  let specFile: string;
  beforeAll(async () => {
    const out = path.join(tmp(), 'e');
    const r = spawnSync(
      process.execPath,
      [path.join(REPO_ROOT, 'dist', 'cli.js'), 'export', '--config', path.join(fixturesDir(), 'llama'), '--out', out],
      { encoding: 'utf8' },
    );
    expect(r.status, r.stderr).toBe(0);
    specFile = path.join(out, 'weight_spec.json');
    client = await startInMemory();
  });
  afterAll(() => client?.close());

  it('publishes key-missing for a misspelled key and hovers a planned key with its planned facts', async () => {
    const { uri, text, diagnostics } = await client.open(specFile);
    expect(diagnostics.filter((d) => d.severity === 1)).toEqual([]);
    const good = '"key": "model.layers.0.mlp.gate_proj.weight"';
    const at = text.indexOf(good);
    const after = await client.edit(uri, at + 8, at + good.length - 1, 'model.layers.0.mlp.gate_prj.weight');
    const errors = after.filter((d) => d.severity === 1);
    expect(errors.map((d) => d.code)).toEqual(['key-missing']);
    expect(errors[0]!.message).toContain('did you mean "model.layers.0.mlp.gate_proj.weight"');

    const now = client.text(uri);
    const onKey = now.indexOf('"key": "model.norm.weight"') + 10;
    const hover = await client.request<Hover>('textDocument/hover', { textDocument: { uri }, position: positionOf(now, onKey) });
    const value = (hover.contents as { value: string }).value;
    expect(value).toContain('dtype `F32` · shape `[64]`');
    expect(value).toContain('prepare has not written it yet');
    expect(value).not.toContain('see the diagnostic');
  });
});
