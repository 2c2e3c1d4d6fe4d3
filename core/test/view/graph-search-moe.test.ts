// Searching the graph explorer for "experts" finds QEfficient's packed MoE experts (issue 50.4):
// on the gpt-oss-20b export (`export --config shared/configs/gpt-oss-20b.json`), whose expert
// tensors are graph inputs named `<module>.moe_weights.{gate,up,down}(_bias)` with no "experts"
// in any name, every op that reads one is found, in every layer, as the file itself says
// (protobufjs's decode of the ONNX, not the explorer's model).
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { exportFromConfig } from '../../src/export/export-config';
import { readModel } from '../../src/formats/onnx';
import { GraphSearch, buildViewerPage, graphModelOf, type GraphModel } from '../../src/view';
import { weightAliases } from '../../src/view/graph-search';
import { configsDir, describeFixtures } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-graph-search-moe-');

describeFixtures('graph search on the gpt-oss-20b export', () => {
  let m: GraphModel;
  let readers: Set<string>;
  let layers: number;
  beforeAll(async () => {
    const dir = tmp();
    fs.copyFileSync(path.join(configsDir(), 'gpt-oss-20b.json'), path.join(dir, 'config.json'));
    layers = (JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')) as { num_hidden_layers: number }).num_hidden_layers;
    const out = path.join(dir, 'export');
    await exportFromConfig({ config: dir, out });
    const file = path.join(out, 'model.onnx');
    const r = await buildViewerPage(file);
    m = graphModelOf(r.graph!, file, r.graph!.values);
    const proto = await readModel(file);
    readers = new Set(proto.graph!.node!.filter((n) => n.input!.some((i) => /\.moe_weights\./.test(i))).map((n) => n.name!));
  }, 60_000);

  it('finds every op reading a packed expert tensor, in every layer, by "experts"', () => {
    expect(m.values.some((v) => /experts/i.test(v.name))).toBe(false);
    expect(readers.size).toBeGreaterThanOrEqual(layers * 3);
    const hits = new GraphSearch(m).find('experts', 10_000);
    expect(new Set(hits.map((h) => m.nodes[h.node]!.name))).toEqual(readers);
    for (const h of hits)
      expect(h).toMatchObject({ what: 'weight', name: expect.stringMatching(/\.experts\.(gate|up|down)(_bias)? \(packed experts\)$/) });
    const sections = new Set(hits.map((h) => m.sections[m.nodes[h.node]!.section]!.id));
    expect(sections).toEqual(new Set(Array.from({ length: layers }, (_, i) => `layer-${i}`)));
    // One role of one layer, as the panel's row names it.
    const down = new GraphSearch(m).find('layers.7.mlp.experts.down (');
    expect(down.map((h) => h.name)).toEqual(['model.layers.7.mlp.experts.down (packed experts)']);
    expect(m.nodes[down[0]!.node]!.inputs.map((v) => m.values[v]?.name)).toContain('model.layers.7.mlp.moe_weights.down');
  });
});

it('names a packed expert tensor by its experts and a weight by its checkpoint key', () => {
  const m = {
    sources: { 'w.0': { input: 0, key: 'model.ck.key', entry: '{}' } },
  } as unknown as GraphModel;
  expect(weightAliases(m, 'model.layers.2.mlp.moe_weights.gate_bias')).toEqual(['model.layers.2.mlp.experts.gate_bias (packed experts)']);
  expect(weightAliases(m, 'w.0')).toEqual(['model.ck.key']);
  expect(weightAliases(m, 'model.layers.2.mlp.gate.weight')).toEqual([]);
  expect(weightAliases(m, 'constructor')).toEqual([]);
});
