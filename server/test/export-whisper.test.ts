// The language server on the two specs a Whisper export writes (whisper fixture: encoder/ and
// decoder/ over one prepared checkpoint): each opens with zero diagnostics against the prepared
// checkpoint and its own model.onnx — input_features, encoder_hidden_states and the self / cross
// caches are runtime inputs, not unmapped weights — and hover on the encoder's first conv shows
// its Conv1d weight [d_model, num_mel_bins, 3].
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Hover } from 'vscode-languageserver-protocol';
import { tempDir } from '../../core/test/support/check-helpers';
import { describeFixtures, fixturesDir, REPO_ROOT } from '../../test/support/fixtures';
import { positionOf, startInMemory, type TestClient } from './harness';
import { bundleServer } from './support';

const cli = (args: string[]) =>
  execFileSync(process.execPath, [path.join(REPO_ROOT, 'dist', 'cli.js'), ...args], { cwd: REPO_ROOT, stdio: 'pipe' }).toString();

describeFixtures('a Whisper export (two specs) in the language server', () => {
  let client: TestClient;
  let dir: string;
  beforeAll(async () => {
    await bundleServer(REPO_ROOT);
    dir = tempDir('ws-lsp-whisper-');
    const model = path.join(dir, 'model');
    cpSync(path.join(fixturesDir(), 'whisper'), model, { recursive: true });
    for (const f of readdirSync(model)) chmodSync(path.join(model, f), 0o644);
    cli(['export', '--config', model, '--out', path.join(dir, 'out')]);
    cli(['prepare', '--checkpoint', model, '--dtype', 'float32']);
    client = await startInMemory();
  });
  afterAll(() => client?.close());

  it('encoder/weight_spec.json and decoder/weight_spec.json open with zero diagnostics; hover shows the conv input', async () => {
    const e = await client.open(path.join(dir, 'out', 'encoder', 'weight_spec.json'));
    expect(e.diagnostics.map((d) => d.message)).toEqual([]);
    const d = await client.open(path.join(dir, 'out', 'decoder', 'weight_spec.json'));
    expect(d.diagnostics.map((x) => x.message)).toEqual([]);
    const name = 'model.encoder.conv1.weight';
    const at = e.text.indexOf(`"name": "${name}"`) + 11;
    const hover = await client.request<Hover>('textDocument/hover', { textDocument: { uri: e.uri }, position: positionOf(e.text, at) });
    expect((hover.contents as { value: string }).value).toContain(`ONNX input \`${name}\` of \`model.onnx\`: \`F32\` \`[64, 80, 3]\``);
  });
});
