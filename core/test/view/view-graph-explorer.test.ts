// The graph explorer's pure logic (core/src/view: graph-model, graph-layout, graph-search) on
// the real 30B MoE export (shared/configs/qwen3-30b-a3b.json, 48 layers, 4,250 nodes):
// constants folded into their consumers with the values protobufjs decodes from the file (an
// independent path from the viewer's wire walk), one section per layer, weight sources from the
// export's own weight_spec.json, an incremental layout whose boxes do not overlap, and search.
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { exportFromConfig } from '../../src/export/export-config';
import { readModel } from '../../src/formats/onnx';
import { GraphLayout, HEAD_H, OP_CATEGORIES, opCategory, slotName } from '../../src/view/graph-layout';
import { layeredLayout } from '../../src/view/layered-layout';
import { GraphSearch, buildViewerPage, graphModelOf, neighbors, type GraphModel } from '../../src/view';
import { configsDir, describeFixtures } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-graph-explorer-');

describeFixtures('graph explorer on the 30B MoE export', () => {
  let file: string;
  let m: GraphModel;
  let proto: Awaited<ReturnType<typeof readModel>>;
  let spec: { inputs: { name: string; location: { file: number; key: string } }[]; files: { path: string }[] };
  beforeAll(async () => {
    const dir = tmp();
    fs.copyFileSync(path.join(configsDir(), 'qwen3-30b-a3b.json'), path.join(dir, 'config.json'));
    const out = path.join(dir, 'export');
    await exportFromConfig({ config: dir, out });
    file = path.join(out, 'model.onnx');
    const r = await buildViewerPage(file);
    m = graphModelOf(r.graph!, file, r.graph!.values);
    proto = await readModel(file);
    spec = JSON.parse(fs.readFileSync(path.join(out, 'weight_spec.json'), 'utf8'));
  }, 60_000);

  it('folds every Constant node into its consumers, with the value the file holds', () => {
    const nodes = proto.graph!.node!;
    const constants = nodes.filter((n) => n.opType === 'Constant');
    expect(constants.length).toBeGreaterThan(10);
    expect(m.folded).toBe(constants.length);
    expect(m.nodes.length).toBe(nodes.length - constants.length);
    expect(m.nodes.some((n) => n.op === 'Constant')).toBe(false);
    for (const c of constants) {
      const t = c.attribute!.find((a) => a.name === 'value')!.t!;
      const v = m.values.find((x) => x.name === c.output![0])!;
      expect(v.kind).toBe('const');
      const dims = (t.dims ?? []).map(Number);
      expect(v.text).toContain(`[${dims.join(', ')}]`);
      // int64 constants (shapes, axes): the leading values as written.
      if (t.dataType === 7 && t.rawData?.length) {
        const raw = Buffer.from(t.rawData);
        const vals = Array.from({ length: Math.min(raw.length / 8, 16) }, (_, i) => raw.readBigInt64LE(i * 8).toString());
        expect(v.text).toContain(dims.length ? `[${vals.join(', ')}` : ` ${vals[0]}`);
      }
      expect(v.consumers.length).toBeGreaterThan(0);
    }
  });

  it('reads attributes as protobufjs decodes them', () => {
    const t = proto.graph!.node!.find((n) => n.name === '/layers.3/attn/Transpose')!;
    const perm = t.attribute!.find((a) => a.name === 'perm')!.ints!.map(Number);
    const node = m.nodes.find((n) => n.name === '/layers.3/attn/Transpose')!;
    expect(node.attrs).toEqual([{ name: 'perm', value: `[${perm.join(', ')}]` }]);
  });

  it('has one section per layer, each holding its own layer weights, and weight sources from the spec', () => {
    expect(m.sections.map((s) => s.id)).toEqual(['prologue', ...Array.from({ length: 48 }, (_, i) => `layer-${i}`), 'head']);
    for (const v of m.values.filter((x) => x.kind === 'weight')) {
      const layer = /layers\.(\d+)\./.exec(v.name)?.[1];
      for (const c of v.consumers)
        expect(m.sections[m.nodes[c]!.section]!.id).toMatch(layer ? new RegExp(`^layer-${layer}$`) : /^(prologue|head)$/);
    }
    const name = 'model.layers.3.self_attn.v_proj.weight';
    const i = spec.inputs.findIndex((x) => x.name === name);
    const src = m.sources[name]!;
    expect(src).toMatchObject({ input: i, key: spec.inputs[i]!.location.key });
    // Not prepared, no link: the file where the export's report says prepare writes it (issue 50.1).
    const reported = JSON.parse(fs.readFileSync(path.join(path.dirname(file), 'export-report.json'), 'utf8')).prepared.dir as string;
    const [head, ...rest] = spec.files[spec.inputs[i]!.location.file]!.path.split('/');
    expect(head).toBe(path.basename(reported));
    expect(src.file).toBe(path.join(reported, ...rest));
    expect(JSON.parse(src.entry)).toMatchObject({ name });
    const v = m.values.find((x) => x.name === name)!;
    expect(v.dims).toEqual(proto.graph!.input!.find((x) => x.name === name)!.type!.tensorType!.shape!.dim!.map((d) => Number(d.dimValue)));
  });

  it('lays out collapsed blocks, then one expanded layer only, without overlapping boxes', () => {
    const L = new GraphLayout(m);
    L.place();
    expect(L.placed.every((p) => !p.expanded)).toBe(true);
    const s3 = m.sections.findIndex((s) => s.id === 'layer-3');
    L.expanded.add(s3);
    const spy: number[] = [];
    const orig = L.layoutOf.bind(L);
    L.layoutOf = (s) => (spy.push(s), orig(s));
    L.place();
    expect(new Set(spy)).toEqual(new Set([s3]));
    const lay = L.layoutOf(s3);
    // Every operator of the layer is a box; its weights are rows that keep the layer number.
    expect(lay.boxes.filter((b) => b.kind === 'op').length).toBe(m.sections[s3]!.nodes.length);
    const rows = lay.boxes.flatMap((b) => b.rows.map((r) => r.text));
    expect(rows).toContain('B = layers.3.self_attn.v_proj.weight');
    expect(rows.some((r) => r.startsWith('shape = int64['))).toBe(true);
    for (const [i, a] of lay.boxes.entries())
      for (const b of lay.boxes.slice(i + 1)) {
        const apart = a.x + a.w <= b.x || b.x + b.w <= a.x || a.y + a.h <= b.y || b.y + b.h <= a.y;
        expect(apart).toBe(true);
      }
    // The stack: sections in order, no overlap; hit-testing finds the box at a node's rectangle.
    for (let i = 1; i < L.placed.length; i++) expect(L.placed[i]!.y).toBeGreaterThan(L.placed[i - 1]!.y + L.placed[i - 1]!.h);
    const gemm = m.nodes.findIndex((n) => n.name === '/layers.3/attn/Gemm_2');
    const r = L.rectOf(gemm);
    const hit = L.hit(r.x + r.w / 2, r.y + HEAD_H / 2)!;
    expect(hit.box?.node).toBe(gemm);
    // A collapsed section answers with its block.
    const r0 = L.rectOf(m.sections[0]!.nodes[0]!);
    expect(L.hit(r0.x + 5, r0.y + 5)).toEqual({ section: 0 });
  });

  it('searches node, input and tensor names and op types, exact matches first', () => {
    const s = new GraphSearch(m);
    const hits = s.find('past_key.7');
    expect(hits[0]).toMatchObject({ what: 'input', name: 'past_key.7' });
    expect(m.sections[m.nodes[hits[0]!.node]!.section]!.id).toBe('layer-7');
    const w = s.find('model.layers.12.self_attn.v_proj.weight');
    expect(m.nodes[w[0]!.node]!.name).toBe('/layers.12/attn/Gemm_2');
    expect(new Set(s.find('topk').map((h) => h.node)).size).toBe(48);
    expect(s.find('/layers.5/attn/Softmax')[0]).toMatchObject({ what: 'node', name: '/layers.5/attn/Softmax' });
    expect(s.find('  ')).toEqual([]);
    const n = m.nodes.findIndex((x) => x.name === '/layers.5/attn/Softmax');
    const nb = neighbors(m, n);
    expect(nb.up.map((i) => m.nodes[i]!.name)).toEqual(['/layers.5/attn/Where']);
    expect(nb.down.map((i) => m.nodes[i]!.name)).toEqual(['/layers.5/attn/MatMul_1']);
  });
});

describe('graph search without fixtures', () => {
  it('matches a constant by name and lands on its consumer', () => {
    const m: GraphModel = {
      file: 'x.onnx',
      nodes: [{ op: 'Reshape', name: 'r', inputs: [0, 1], outputs: [2], attrs: [], section: 0 }],
      values: [
        { name: 'x', kind: 'input', producer: -1, consumers: [0] },
        { name: '/const/shape_0', kind: 'const', text: 'int64[1] [-1]', producer: -1, consumers: [0] },
        { name: 'y', kind: 'output', producer: 0, consumers: [] },
      ],
      sections: [{ id: 'graph', label: 'whole graph', nodes: [0], weights: 0, ops: 'Reshape 1' }],
      sources: {},
      folded: 1,
    };
    expect(new GraphSearch(m).find('SHAPE_0')).toEqual([{ node: 0, what: 'const', name: '/const/shape_0' }]);
    const L = new GraphLayout(m);
    L.expanded.add(0);
    L.place();
    const lay = L.layoutOf(0);
    expect(lay.boxes.map((b) => b.kind).sort()).toEqual(['input', 'op', 'output']);
    expect(lay.boxes.find((b) => b.kind === 'op')!.rows).toEqual([{ kind: 'const', value: 1, text: 'shape = int64[1] [-1]' }]);
    expect(lay.edges.length).toBe(2);
  });

  it('names op inputs and colors ops by category, as the legend lists them', () => {
    expect([slotName('Reshape', 1), slotName('Gemm', 1), slotName('Concat', 3)]).toEqual(['shape', 'B', 'in3']);
    expect(['Gemm', 'Softmax', 'ReduceMean', 'Transpose', 'Mul'].map(opCategory)).toEqual([
      'layer',
      'activation',
      'normalization',
      'tensor',
      'other',
    ]);
    expect(new Set(OP_CATEGORIES)).toEqual(new Set(['layer', 'activation', 'normalization', 'tensor', 'other']));
  });
});

describe('layered layout', () => {
  it('ranks edges downward, routes long edges through their ranks, and never overlaps boxes', () => {
    const sizes = Array.from({ length: 12 }, (_, i) => ({ w: 40 + (i % 3) * 30, h: 20 + (i % 2) * 15 }));
    const edges: [number, number][] = [
      [0, 1],
      [1, 2],
      [2, 3],
      [3, 4],
      [0, 4],
      [5, 2],
      [1, 6],
      [6, 7],
      [7, 4],
      [8, 9],
      [9, 10],
      [10, 11],
      [0, 11],
    ];
    const g = layeredLayout({ sizes, edges });
    edges.forEach(([a, b], i) => {
      expect(g.y[a]!).toBeLessThan(g.y[b]!);
      const p = g.points[i]!;
      // From the source's bottom to the target's top, monotonically down.
      expect(p[1]).toBeCloseTo(g.y[a]! + sizes[a]!.h / 2);
      expect(p[p.length - 1]).toBeCloseTo(g.y[b]! - sizes[b]!.h / 2);
      for (let j = 3; j < p.length; j += 2) expect(p[j]!).toBeGreaterThan(p[j - 2]!);
    });
    // 0 → 4 spans 4 ranks: 3 bends between its ends.
    expect(g.points[4]!.length).toBe(2 * 5);
    for (let a = 0; a < 12; a++)
      for (let b = a + 1; b < 12; b++) {
        const apart =
          Math.abs(g.x[a]! - g.x[b]!) >= (sizes[a]!.w + sizes[b]!.w) / 2 || Math.abs(g.y[a]! - g.y[b]!) >= (sizes[a]!.h + sizes[b]!.h) / 2;
        expect(apart).toBe(true);
      }
    // A source feeding one node sits in the rank right above it (with node 1), not at the top.
    expect(g.y[5]!).toBe(g.y[1]!);
    expect(g.y[5]!).toBeGreaterThan(g.y[0]!);
  });

  it('survives a cycle (not valid ONNX) by dropping the back edge', () => {
    const g = layeredLayout({
      sizes: [
        { w: 10, h: 10 },
        { w: 10, h: 10 },
      ],
      edges: [
        [0, 1],
        [1, 0],
      ],
    });
    expect(g.points[0]!.length).toBe(4);
    expect(g.points[1]).toEqual([]);
  });
});
