// The language server on an embedding export (the bert fixture through `export --config`, then
// prepare): the spec opens with zero diagnostics against its graph (input_ids, attention_mask and
// token_type_ids are model inputs, not weights to map) and the prepared checkpoint; hover on an
// input shows its ONNX input; a name the graph lacks is diagnosed.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Hover } from 'vscode-languageserver-protocol';
import { cliInProcess } from '../../test/support/cli';
import { describeFixtures, fixturesDir } from '../../test/support/fixtures';
import { tempDirs } from '../../test/support/temp';
import { positionOf, startInMemory, type TestClient } from './harness';

const tmp = tempDirs('ws-lsp-embedding-');

describeFixtures('an embedding export in the language server', () => {
  let client: TestClient;
  let dir = '';
  beforeAll(async () => {
    dir = tmp();
    fs.cpSync(path.join(fixturesDir(), 'bert'), path.join(dir, 'model'), { recursive: true });
    for (const args of [
      ['export', '--config', 'model', '--out', 'out'],
      ['prepare', '--checkpoint', 'model', '--dtype', 'float32'],
    ]) {
      const r = await cliInProcess(args, { cwd: dir });
      expect(r.code, r.stderr).toBe(0);
    }
    client = await startInMemory();
  });
  afterAll(() => client?.close());

  it('weight_spec.json opens with zero diagnostics; hover shows the ONNX input; a name the graph lacks is an error', async () => {
    const spec = path.join(dir, 'out', 'weight_spec.json');
    const s = await client.open(spec);
    expect(s.diagnostics.map((d) => d.message)).toEqual([]);
    const name = 'encoder.layer.1.intermediate.dense.weight';
    const at = s.text.indexOf(`"name": "${name}"`) + 11;
    const hover = await client.request<Hover>('textDocument/hover', { textDocument: { uri: s.uri }, position: positionOf(s.text, at) });
    expect((hover.contents as { value: string }).value).toContain(`ONNX input \`${name}\` of \`model.onnx\`: \`F32\` \`[160, 64]\``);
    const bad = path.join(dir, 'out', 'bad.weight_spec.json');
    fs.writeFileSync(bad, s.text.replace(`"name": "${name}"`, '"name": "encoder.layer.1.intermediate.dense.weigth"'));
    const b = await client.open(bad);
    expect(b.diagnostics.map((d) => d.message).join('\n')).toMatch(/"encoder\.layer\.1\.intermediate\.dense\.weigth" is not a graph input/);
  });
});
