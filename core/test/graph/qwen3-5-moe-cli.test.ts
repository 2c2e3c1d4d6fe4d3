/**
 * Qwen3.5-MoE through the real CLI (issue #34's acceptance path): export --config → prepare →
 * compile (ORT) → run reproduces the fixture's generated_ids with the whole prompt in one call
 * and with the prompt fed in calls of 3 tokens (3, 3 and 1, the last padded at position −1:
 * `run --prefill-seq-len 3`), the runner carrying conv_state / recurrent_state between calls;
 * the published multimodal layout written to disk (config + checkpoint made here from the
 * fixture's) exports, prepares and runs the same text model; qaic's specializations and custom
 * IO name the linear-attention states.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { fromFloat32 } from '../../src/formats/float-convert';
import { writeSafetensors } from '../../src/formats/safetensors';
import { cliStdout } from '../../../test/support/cli';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { multimodalCheckpoint, multimodalConfig } from '../support/graph-reference-qwen35';
import { loadCheckpoint } from '../support/graph-support';

const tmp = tempDirs('ws-qwen35-cli-');

const ws = cliStdout;

describeFixtures('qwen3_5_moe through the CLI', () => {
  const src = () => path.join(fixturesDir(), 'qwen3_5_moe');
  const ref = () =>
    JSON.parse(readFileSync(path.join(src(), 'reference.json'), 'utf8')) as { input_ids: number[]; generated_ids: number[] };

  it('compile → run reproduces generated_ids with the whole prompt and with the prompt in pieces of 3, 3 and 1', async () => {
    const root = tmp();
    const out = path.join(root, 'export');
    const prepared = path.join(root, 'prepared');
    await ws(root, 'export', '--config', src(), '--out', out, '--ctx-len', '32');
    await ws(root, 'prepare', '--checkpoint', src(), '--dtype', 'float32', '--out', prepared);
    await ws(root, 'compile', out, '--prepared', prepared);
    const prompt = ref().input_ids.join(',');
    const want = ref().generated_ids.join(',');
    expect((await ws(root, 'run', out, '--input-ids', prompt, '--max-new-tokens', '5')).trim()).toBe(want);
    expect((await ws(root, 'run', out, '--input-ids', prompt, '--max-new-tokens', '5', '--prefill-seq-len', '3')).trim()).toBe(want);
    // qaic: both specializations, and the custom IO lists each state next to its retained output in layer order
    const dry = await ws(root, 'compile', out, '--backend', 'qaic', '--dry-run');
    const io = [...dry.matchAll(/IOName: (\S+)/g)].map((m) => m[1]);
    expect(io.slice(0, 4)).toEqual(['conv_state.0', 'conv_state.0_RetainedState', 'recurrent_state.0', 'recurrent_state.0_RetainedState']);
    expect(io.slice(12)).toEqual(['past_key.3', 'past_key.3_RetainedState', 'past_value.3', 'past_value.3_RetainedState']);
    expect(dry).toMatch(/"seq_len":"1"/);
  });

  it('the published multimodal layout (text_config, model.language_model.*, model.visual.* and mtp.* on disk) exports and runs the text model', async () => {
    const root = tmp();
    const model = path.join(root, 'Qwen3.5-MoE-mm');
    mkdirSync(model);
    const cfg = JSON.parse(readFileSync(path.join(src(), 'config.json'), 'utf8'));
    writeFileSync(path.join(model, 'config.json'), JSON.stringify(multimodalConfig(cfg)));
    const tensors = [...multimodalCheckpoint(await loadCheckpoint(src()))].map(([key, t]) => ({
      key,
      dtype: 'F32' as const,
      shape: t.shape,
      data: fromFloat32(t.data, 'F32'),
    }));
    await writeSafetensors(path.join(model, 'model.safetensors'), tensors);
    const out = path.join(root, 'export');
    const prepared = path.join(root, 'prepared');
    await ws(root, 'export', '--config', model, '--out', out, '--ctx-len', '32');
    const spec = readFileSync(path.join(out, 'weight_spec.json'), 'utf8');
    expect(spec).toContain('model.language_model.layers.0.linear_attn.in_proj_qkv.weight');
    expect(spec).not.toMatch(/model\.visual|"mtp\./);
    await ws(root, 'prepare', '--checkpoint', model, '--dtype', 'float32', '--out', prepared);
    await ws(root, 'compile', out, '--prepared', prepared);
    expect((await ws(root, 'run', out, '--input-ids', ref().input_ids.join(','), '--max-new-tokens', '5')).trim()).toBe(
      ref().generated_ids.join(','),
    );
  });
});
