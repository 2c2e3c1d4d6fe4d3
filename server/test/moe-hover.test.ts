// Issue 23 in the editor: hover on a GPT-OSS expert input of an export shows the MXFP4 source
// tensors it is dequantized from and the dequantized shape the graph consumes — first from
// prepare's plan (before prepare), then from the prepared checkpoint's manifest. Over real
// JSON-RPC, on an export of the gpt_oss_full fixture (mirrored by symlinks, since prepare
// writes beside the checkpoint and the fixtures are read-only).
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Hover } from 'vscode-languageserver-protocol';
import { describeFixtures, fixturesDir, REPO_ROOT } from '../../test/support/fixtures';
import { tempDirs } from '../../test/support/temp';
import { positionOf, startInMemory, type TestClient } from './harness';

const tmp = tempDirs('ws-srv-moe-hover-');
const cli = (...args: string[]) => spawnSync(process.execPath, [path.join(REPO_ROOT, 'dist', 'cli.js'), ...args], { encoding: 'utf8' });

describeFixtures('hover on GPT-OSS expert inputs', () => {
  let client: TestClient;
  let ckpt: string;
  let specFile: string;
  beforeAll(async () => {
    const root = tmp();
    ckpt = path.join(root, 'gpt-oss-tiny');
    mkdirSync(ckpt);
    const src = path.join(fixturesDir(), 'gpt_oss_full');
    for (const f of readdirSync(src)) symlinkSync(path.join(src, f), path.join(ckpt, f));
    const out = path.join(root, 'e');
    const r = cli('export', '--config', ckpt, '--out', out);
    expect(r.status, r.stderr).toBe(0);
    specFile = path.join(out, 'weight_spec.json');
    client = await startInMemory();
  });
  afterAll(() => client?.close());

  const hoverOn = async (uri: string, text: string, key: string) => {
    const at = text.indexOf(`"key": "${key}"`);
    expect(at).toBeGreaterThan(0);
    const hover = await client.request<Hover>('textDocument/hover', { textDocument: { uri }, position: positionOf(text, at + 10) });
    return (hover.contents as { value: string }).value;
  };

  it('before prepare (planned) and after prepare (manifest): the MXFP4 blocks/scales and the dequantized shape', async () => {
    const { uri, text, diagnostics } = await client.open(specFile);
    expect(diagnostics.filter((d) => d.severity === 1)).toEqual([]);
    const gate = 'model.layers.1.mlp.moe_weights.gate';
    let value = await hoverOn(uri, text, gate);
    expect(value).toContain('prepare has not written it yet');
    expect(value).toContain('from MXFP4');
    // layer 1's blocks and scales sit in different shards of the source checkpoint
    expect(value).toContain('source `model.layers.1.mlp.experts.gate_up_proj_blocks` `U8` [4, 192, 2, 16]');
    expect(value).toContain('source `model.layers.1.mlp.experts.gate_up_proj_scales` `U8` [4, 192, 2]');
    expect(value).toContain('dequantized shape `[4, 64, 96]` (`F32`)');
    expect(value).toContain('even rows of gate_up_proj');

    const down = await hoverOn(uri, text, 'model.layers.0.mlp.moe_weights.down');
    expect(down).toContain('source `model.layers.0.mlp.experts.down_proj_blocks` `U8` [4, 64, 3, 16]');
    expect(down).toContain('dequantized shape `[4, 96, 64]`');
    const bias = await hoverOn(uri, text, 'model.layers.0.mlp.moe_weights.up_bias');
    expect(bias).toContain('source `model.layers.0.mlp.experts.gate_up_proj_bias` `BF16` [4, 192]');
    expect(bias).not.toContain('_blocks');
    // a dense key is not described as dequantized
    expect(await hoverOn(uri, text, 'model.layers.0.self_attn.sinks')).not.toContain('MXFP4');

    const p = cli('prepare', '--checkpoint', ckpt, '--dtype', 'float32');
    expect(p.status, p.stderr).toBe(0);
    const again = await client.open(specFile);
    value = await hoverOn(again.uri, again.text, gate);
    expect(value).not.toContain('prepare has not written it yet');
    expect(value).toMatch(/shard \[`experts-layer-00001\.safetensors`\]\(file:\/\/\//);
    expect(value).toContain('source `model.layers.1.mlp.experts.gate_up_proj_blocks` `U8` [4, 192, 2, 16]');
    expect(value).toContain('dequantized shape `[4, 64, 96]` (`F32`)');
  });
});
