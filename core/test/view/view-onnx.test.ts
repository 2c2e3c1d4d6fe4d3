// The ONNX viewer's page (core/src/view): the inspect summary, weights grouped by layer, the
// embedded spec with its problems, and the layer groups of the graph view. Expected values
// come from the export's own weight_spec.json and config.json (read with JSON.parse) and from
// protobufjs's full decode of the model (an independent path from the viewer's wire walk).
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { exportFromConfig } from '../../src/export/export-config';
import { readModel, setMetadata, writeModel } from '../../src/formats/onnx';
import { SPEC_METADATA_KEY } from '../../src/spec';
import { buildViewerPage, graphModelOf, readGraphNodes, type GraphIndex, type GraphModel, type OnnxPage } from '../../src/view';
import { configsDir, describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-view-onnx-');

/** The names of the weights the nodes of section `id` of the explorer's model read. */
function sectionWeights(m: GraphModel, id: string): string[] {
  const s = m.sections.find((x) => x.id === id)!;
  const names = s.nodes.flatMap((n) => m.nodes[n]!.inputs).filter((v) => v >= 0 && m.values[v]!.kind === 'weight');
  return [...new Set(names.map((v) => m.values[v]!.name))].sort();
}

async function onnxPage(file: string): Promise<{ page: OnnxPage; graph: GraphIndex }> {
  const r = await buildViewerPage(file);
  if (r.page.kind !== 'onnx') throw new Error(`expected an ONNX page, got ${JSON.stringify(r.page)}`);
  return { page: r.page, graph: r.graph! };
}

describeFixtures('ONNX page of a weight-free export', () => {
  let out: string;
  let spec: { inputs: { name: string }[]; files: { path: string }[]; version: number };
  let layers: number;
  beforeAll(async () => {
    // The config alone (beside the checkpoint it would plan prepare's layout from the tensors).
    const dir = tmp();
    fs.copyFileSync(path.join(fixturesDir(), 'llama', 'config.json'), path.join(dir, 'config.json'));
    out = path.join(dir, 'export');
    await exportFromConfig({ config: dir, out });
    spec = JSON.parse(fs.readFileSync(path.join(out, 'weight_spec.json'), 'utf8'));
    layers = JSON.parse(fs.readFileSync(path.join(fixturesDir(), 'llama', 'config.json'), 'utf8')).num_hidden_layers;
  });

  it('shows the interface with symbolic dims, and the weights by layer as the spec lists them', async () => {
    const { page } = await onnxPage(path.join(out, 'model.onnx'));
    const model = await readModel(path.join(out, 'model.onnx'));
    expect(page.irVersion).toBe(model.irVersion);
    expect(page.nodeCount).toBe(model.graph!.node!.length);
    expect(page.opsets).toEqual(model.opsetImport!.map((o) => ({ domain: o.domain || 'ai.onnx', version: o.version })));
    const weights = new Set(spec.inputs.map((i) => i.name));
    // Runtime inputs: every graph input that the spec does not map.
    expect(page.inputs.map((v) => v.name)).toEqual(model.graph!.input!.map((v) => v.name!).filter((n) => !weights.has(n)));
    expect(page.inputs.find((v) => v.name === 'input_ids')!.dims).toEqual(['batch_size', 'seq_len']);
    expect(page.outputs[0]!.name).toBe('logits');
    expect(page.weightsAre).toBe('inputs');
    const grouped = page.weightGroups.flatMap((g) => g.weights.map((w) => w.name));
    expect(grouped.sort()).toEqual([...weights].sort());
    expect(page.weightGroups.map((g) => g.label)).toEqual([...Array.from({ length: layers }, (_, i) => `layer ${i}`), 'other']);
    for (const g of page.weightGroups.filter((x) => x.layer >= 0)) {
      expect(g.weights.every((w) => w.name.startsWith(`model.layers.${g.layer}.`))).toBe(true);
    }
    // The embedded spec: the export's own, whose prepared checkpoint does not exist yet.
    expect(page.spec).toMatchObject({ version: spec.version, inputs: spec.inputs.length, files: spec.files.map((f) => f.path) });
    expect(page.spec!.problems.map((p) => p.code)).toEqual(['not-prepared']);
    expect(page.metadata.find((m) => m.key === SPEC_METADATA_KEY)!.length).toBe(
      model.metadataProps!.find((m) => m.key === SPEC_METADATA_KEY)!.value!.length,
    );
  });

  it('walks the same nodes as a full decode, and groups them: prologue, each layer, head', async () => {
    const file = path.join(out, 'model.onnx');
    const model = await readModel(file);
    const nodes = readGraphNodes(file);
    expect(nodes.map((n) => [n.name, n.op, n.inputs, n.outputs])).toEqual(
      model.graph!.node!.map((n) => [n.name ?? '', n.opType, n.input ?? [], n.output ?? []]),
    );
    const { page, graph } = await onnxPage(file);
    expect(graph.groups.map((g) => g.id)).toEqual(['prologue', ...Array.from({ length: layers }, (_, i) => `layer-${i}`), 'head']);
    expect(graph.groups.reduce((s, g) => s + g.nodes, 0)).toBe(page.nodeCount);
    // Every node named for a layer lands in that layer's group.
    nodes.forEach((n, i) => {
      const m = /\/layers\.(\d+)\//.exec(n.name);
      if (m) expect(graph.groups[graph.groupOf[i]!]!.id).toBe(`layer-${m[1]}`);
    });
    // The explorer's blocks are these groups, Constant nodes folded into their consumers.
    const gx = graphModelOf(graph, file, graph.values);
    const constants = nodes.filter((n) => n.op === 'Constant').length;
    expect(gx.folded).toBe(constants);
    expect(gx.nodes.length).toBe(nodes.length - constants);
    for (let l = 0; l < layers; l++) {
      const s = gx.sections.find((x) => x.id === `layer-${l}`)!;
      expect(s.nodes.length).toBe(
        graph.groups[l + 1]!.nodes - nodes.filter((n, i) => n.op === 'Constant' && graph.groupOf[i] === l + 1).length,
      );
      // The layer's weights are exactly the weights its nodes read.
      expect(sectionWeights(gx, s.id)).toEqual(
        spec.inputs
          .map((i) => i.name)
          .filter((n) => n.startsWith(`model.layers.${l}.`))
          .sort(),
      );
      // Its residual stream leaves towards the next block.
      const mine = new Set(s.nodes);
      expect(s.nodes.some((n) => gx.nodes[n]!.outputs.some((v) => v >= 0 && gx.values[v]!.consumers.some((c) => !mine.has(c))))).toBe(true);
    }
    expect(sectionWeights(gx, 'head')).toEqual(['lm_head.weight', 'model.norm.weight']);
    const logits = gx.values.find((v) => v.name === 'logits')!;
    expect(gx.sections[gx.nodes[logits.producer]!.section]!.id).toBe('head');
  });

  it('lists the problems of a broken embedded spec', async () => {
    const model = await readModel(path.join(out, 'model.onnx'));
    const broken = JSON.parse(model.metadataProps!.find((m) => m.key === SPEC_METADATA_KEY)!.value!);
    broken.inputs[0].name = 'model.embed_tokens.weigth';
    const file = path.join(out, 'broken.onnx');
    await writeModel(file, setMetadata(model, SPEC_METADATA_KEY, JSON.stringify(broken)));
    const { page } = await onnxPage(file);
    const p = page.spec!.problems.find((x) => x.code === 'name-not-in-onnx');
    expect(p, JSON.stringify(page.spec!.problems)).toBeDefined();
    expect(p!.severity).toBe('error');
    expect(p!.path).toBe('inputs[0].name');
    expect(p!.message).toContain('model.embed_tokens.weigth');

    await writeModel(file, setMetadata(model, SPEC_METADATA_KEY, '{"inputs": 3}'));
    const { page: bad } = await onnxPage(file);
    expect(bad.spec!.problems.map((x) => x.code)).toContain('schema');
  });
});

describeFixtures('ONNX page of a legacy export with embedded weights', () => {
  it('lists the initializers as the weights and the one runtime input', async () => {
    const file = path.join(fixturesDir(), 'llama', 'legacy.onnx');
    const model = await readModel(file);
    const { page, graph } = await onnxPage(file);
    expect(page.weightsAre).toBe('initializers');
    expect(page.spec).toBeUndefined();
    expect(page.inputs.map((v) => v.name)).toEqual(['input_ids']);
    const names = page.weightGroups.flatMap((g) => g.weights.map((w) => w.name)).sort();
    expect(names).toEqual(model.graph!.initializer!.map((t) => t.name!).sort());
    expect(graph.groups.reduce((s, g) => s + g.nodes, 0)).toBe(model.graph!.node!.length);
    for (const g of graph.groups) expect(g.nodes).toBeGreaterThan(0);
  });
});

describe('ONNX page of a real full-size config export', () => {
  it.skipIf(!fs.existsSync(path.join(configsDir(), 'qwen3-30b-a3b.json')))(
    'Qwen3-30B-A3B: 48 layer groups, 128-expert weights grouped per layer',
    async () => {
      const dir = tmp();
      fs.copyFileSync(path.join(configsDir(), 'qwen3-30b-a3b.json'), path.join(dir, 'config.json'));
      const out = path.join(dir, 'export');
      await exportFromConfig({ config: dir, out });
      const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
      const { page, graph } = await onnxPage(path.join(out, 'model.onnx'));
      expect(graph.groups.filter((g) => g.id.startsWith('layer-')).length).toBe(cfg.num_hidden_layers);
      expect(page.weightGroups.filter((g) => g.layer >= 0).length).toBe(cfg.num_hidden_layers);
      const m = graphModelOf(graph, path.join(out, 'model.onnx'), graph.values);
      expect(sectionWeights(m, 'layer-47')).toContain('model.layers.47.mlp.gate.weight');
    },
  );
});

describe('an unreadable ONNX file', () => {
  it('gives one line naming the file and what is wrong', async () => {
    const dir = tmp();
    const cases: [string, string | Buffer, RegExp][] = [
      ['json.onnx', '{"a": 1}', /JSON/i],
      ['empty.onnx', '', /empty/],
      ['garbage.onnx', Buffer.from([0x08, 0x07, 0x3a, 0xff, 0xff, 0x01]), /claims|truncated|past/],
    ];
    for (const [name, bytes, why] of cases) {
      const file = path.join(dir, name);
      fs.writeFileSync(file, bytes);
      const r = await buildViewerPage(file);
      expect(r.page.kind, name).toBe('error');
      const msg = (r.page as { message: string }).message;
      expect(msg.startsWith(file), msg).toBe(true);
      expect(msg).toMatch(why);
      expect(msg).not.toContain('\n');
    }
  });
});
