// The ONNX viewer's navigable summary (issue 36 item 3): the KV cache of the 30B MoE export in
// one row per run (`past_key.{0..47}: [batch_size, 4, ctx_len, 128] F32`), and the links to
// the export's spec and to a checkpoint that exists (prepared, else the report's source). The
// KV shape is Qwen3-30B-A3B's config (num_key_value_heads 4, head_dim 128, 48 layers), read
// here with JSON.parse.
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { exportFromConfig } from '../../src/export/export-config';
import { planLayout } from '../../src/export/exporter/plan-layout';
import { buildViewerPage, onnxLinks, valueRuns, type OnnxPage, type ValueEntry } from '../../src/view';
import { configsDir, describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-view-sum-');
const row = (r: { label: string; dtype: string; dims: (number | string)[] }) => `${r.label}: [${r.dims.join(', ')}] ${r.dtype}`;

describe('value runs', () => {
  const v = (name: string, dims: (number | string)[] = ['b', 4]): ValueEntry => ({ name, dtype: 'float32', dims });

  it('folds names that differ in their last number, keeping graph order and splitting at a shape change', () => {
    const values = [v('input_ids'), ...[0, 1, 2, 3].flatMap((i) => [v(`past_key.${i}`), v(`past_value.${i}`)]), v('x.0'), v('x.1')];
    values.push(v('past_key.4', ['b', 8]), v('past_key.5', ['b', 8]), v('past_key.6', ['b', 8]));
    const runs = valueRuns(values);
    expect(runs.map((r) => r.label)).toEqual(['input_ids', 'past_key.{0..3}', 'past_value.{0..3}', 'x.0', 'x.1', 'past_key.{4..6}']);
    expect(runs[1]!.names).toEqual(['past_key.0', 'past_key.1', 'past_key.2', 'past_key.3']);
    // A gap splits a run; short runs stay single rows.
    expect(valueRuns([0, 1, 2, 5, 6, 7, 9].map((i) => v(`k.${i}`))).map((r) => r.label)).toEqual(['k.{0..2}', 'k.{5..7}', 'k.9']);
  });
});

describeFixtures('the 30B MoE summary', () => {
  let page: OnnxPage;
  let config: { num_hidden_layers: number; num_key_value_heads: number; head_dim: number };
  beforeAll(async () => {
    const dir = tmp();
    fs.copyFileSync(path.join(configsDir(), 'qwen3-30b-a3b.json'), path.join(dir, 'config.json'));
    config = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
    await exportFromConfig({ config: dir, out: path.join(dir, 'export') });
    const r = await buildViewerPage(path.join(dir, 'export', 'model.onnx'));
    if (r.page.kind !== 'onnx') throw new Error(JSON.stringify(r.page));
    page = r.page;
  }, 60_000);

  it('shows the KV cache in one row per run, inputs and outputs', () => {
    const last = config.num_hidden_layers - 1;
    const kv = `[batch_size, ${config.num_key_value_heads}, ctx_len, ${config.head_dim}] F32`;
    const inputs = valueRuns(page.inputs).map(row);
    expect(inputs).toContain(`past_key.{0..${last}}: ${kv}`);
    expect(inputs).toContain(`past_value.{0..${last}}: ${kv}`);
    expect(inputs).toHaveLength(4); // input_ids, position_ids and the two runs
    expect(page.inputs.length).toBeGreaterThan(2 * config.num_hidden_layers);
    const outputs = valueRuns(page.outputs).map(row);
    expect(outputs).toContain(`past_key.{0..${last}}_RetainedState: ${kv}`);
    expect(outputs).toContain(`past_value.{0..${last}}_RetainedState: ${kv}`);
    expect(outputs).toHaveLength(3);
  });

  it('links the spec beside the graph; no checkpoint exists to link', () => {
    expect(path.basename(page.links?.spec ?? '')).toBe('weight_spec.json');
    expect(page.links?.checkpoint).toBeUndefined();
  });
});

describeFixtures('checkpoint links', () => {
  it('links the source checkpoint before Prepare and the prepared one after', async () => {
    const dir = tmp();
    const model = path.join(dir, 'model');
    fs.mkdirSync(model);
    for (const f of fs.readdirSync(path.join(fixturesDir(), 'llama')))
      if (f.endsWith('.json') || f.endsWith('.safetensors')) fs.copyFileSync(path.join(fixturesDir(), 'llama', f), path.join(model, f));
    const out = path.join(dir, 'export');
    await exportFromConfig({ config: model, out, planner: planLayout });
    const onnx = path.join(out, 'model.onnx');
    const spec = JSON.parse(fs.readFileSync(path.join(out, 'weight_spec.json'), 'utf8')) as { files: { path: string }[] };
    const files = spec.files.map((f) => f.path);
    expect(onnxLinks(onnx, files)).toEqual({
      spec: path.join(out, 'weight_spec.json'),
      checkpoint: path.join(model, 'model-00001-of-00002.safetensors'),
      checkpointIs: 'source',
    });
    // A prepared shard where the spec points: that one.
    const first = path.resolve(out, files[0]!);
    // Export links the prepared folder into the export (a dangling link until Prepare makes it).
    const folder = path.dirname(first);
    const made = fs.lstatSync(folder, { throwIfNoEntry: false })?.isSymbolicLink() ? path.resolve(out, fs.readlinkSync(folder)) : folder;
    fs.mkdirSync(made, { recursive: true });
    fs.writeFileSync(first, '');
    expect(onnxLinks(onnx, files)).toMatchObject({ checkpoint: first, checkpointIs: 'prepared' });
  });
});
