// The ONNX viewer's page (core/src/view) on an embedding export (the bert fixture through
// `export --config`): the runtime inputs and both outputs, BERT's `encoder.layer.{i}` weights
// grouped by layer as the spec lists them, and the graph view's groups (inputs and embedding, then
// one per layer; the pooling reads no weight and follows the last layer). Expected values come from
// the export's own weight_spec.json and the fixture's config.json.
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { exportFromConfig } from '../../src/export/export-config';
import { planLayout } from '../../src/export/exporter/plan-layout';
import { buildViewerPage } from '../../src/view';

const tmp = tempDirs('ws-embedding-view-');

describeFixtures('ONNX page of an embedding export', () => {
  it('inputs, outputs, weights by layer, graph groups', async () => {
    const out = path.join(tmp(), 'export');
    await exportFromConfig({ config: path.join(fixturesDir(), 'bert'), out, planner: planLayout });
    const spec = JSON.parse(fs.readFileSync(path.join(out, 'weight_spec.json'), 'utf8')) as { inputs: { name: string }[] };
    const layers = (JSON.parse(fs.readFileSync(path.join(fixturesDir(), 'bert', 'config.json'), 'utf8')) as { num_hidden_layers: number })
      .num_hidden_layers;
    const r = await buildViewerPage(path.join(out, 'model.onnx'));
    if (r.page.kind !== 'onnx') throw new Error(`expected an ONNX page, got ${r.page.kind}`);
    const page = r.page;
    expect(page.inputs.map((v) => v.name)).toEqual(['input_ids', 'attention_mask', 'token_type_ids']);
    expect(page.inputs[0]!.dims).toEqual(['batch_size', 'seq_len']);
    expect(page.outputs.map((v) => v.name)).toEqual(['last_hidden_state', 'sentence_embedding']);
    expect(page.weightGroups.flatMap((g) => g.weights.map((w) => w.name)).sort()).toEqual(spec.inputs.map((i) => i.name).sort());
    expect(page.weightGroups.map((g) => g.label)).toEqual([...Array.from({ length: layers }, (_, i) => `layer ${i}`), 'other']);
    for (const g of page.weightGroups.filter((x) => x.layer >= 0))
      expect(g.weights.every((w) => w.name.startsWith(`encoder.layer.${g.layer}.`))).toBe(true);
    expect(r.graph!.groups.map((g) => g.id)).toEqual(['prologue', ...Array.from({ length: layers }, (_, i) => `layer-${i}`)]);
  });
});
