// Benchmark (issue 50, item 4: "before writing more layout code, measure a layout library on the
// 61-layer graph"): the graph explorer's own layered layout (core/src/view/layered-layout.ts,
// through GraphLayout.layoutOf) against the two libraries a viewer would adopt — dagre
// (@dagrejs/dagre, what Netron lays out with) and elkjs's layered algorithm (ELK, edge labels
// and directions built in) — on the same graphs: every block of DeepSeek-V3's export
// (shared/configs/deepseek-v3.json: 7,357 nodes, 61 layers), one block at a time as the
// explorer lays them out (expanding a layer), and the whole graph as one (what a flat viewer
// without blocks does). Same box sizes and edges (core sectionGraph), top to bottom, node and
// rank gaps as the explorer uses. Prints per engine: median [min–max] over RUNS of the time to
// lay out all 63 blocks, the slowest single block (what one expand waits for), the whole graph,
// and the laid-out area and edge bends of the blocks (a rough measure of the drawing's size);
// the explorer's own layout also with edge shape labels placed, top to bottom and left to right.
// Not a target: a measurement to decide on (docs/PERFORMANCE.md, "Graph layout").
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, copyFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadBundled } from './support.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const configs = path.resolve(process.env.WEIGHT_SPEC_FIXTURES ?? path.join(root, '..', 'shared', 'fixtures'), '..', 'configs');
const cli = path.join(root, 'dist', 'cli.js');
const RUNS = Math.max(1, Number(process.env.WS_LAYOUT_BENCH_RUNS ?? 3));
const require = createRequire(import.meta.url);
const dagre = require('@dagrejs/dagre');
const ELK = require('elkjs/lib/elk.bundled.js');

if (!existsSync(cli)) {
  console.error('graph-layout.bench: dist/cli.js missing; run `node scripts/bundle.mjs` first');
  process.exit(1);
}
const { buildViewerPage, graphModelOf, GraphLayout, sectionGraph } = await loadBundled(
  root,
  `export { buildViewerPage, graphModelOf } from './core/src/view';
export { GraphLayout, sectionGraph } from './core/src/view/graph-layout';`,
  ['onnxruntime-node', 'vscode'],
);

const tmp = mkdtempSync(path.join(os.tmpdir(), 'ws-layout-bench-'));
mkdirSync(path.join(tmp, 'cfg'));
copyFileSync(path.join(configs, 'deepseek-v3.json'), path.join(tmp, 'cfg', 'config.json'));
const r = spawnSync(process.execPath, [cli, 'export', '--config', path.join(tmp, 'cfg'), '--out', path.join(tmp, 'out')], {
  encoding: 'utf8',
});
if (r.status !== 0) {
  console.error(`graph-layout.bench: export failed: ${r.stderr.trim()}`);
  process.exit(1);
}
const file = path.join(tmp, 'out', 'model.onnx');
const page = await buildViewerPage(file);
const model = graphModelOf(page.graph, file, page.graph.values);
rmSync(tmp, { recursive: true, force: true });
const graphs = model.sections.map((_, s) => sectionGraph(model, s));
const NODESEP = 18;
const RANKSEP = 26;

/** The explorer's layout of one block (a fresh GraphLayout each time: no cache), top to bottom or left to right, labels on or off. */
function ours(s, direction = 'TB', labels = false) {
  const L = new GraphLayout(model);
  L.setDirection(direction);
  L.setLabels(labels);
  const lay = L.layoutOf(s);
  return { w: lay.w, h: lay.h, bends: lay.edges.reduce((a, e) => a + e.pts.length / 2 - 2, 0) };
}

function dagreOf(g) {
  const d = new dagre.graphlib.Graph({ multigraph: true });
  d.setGraph({ rankdir: 'TB', nodesep: NODESEP, ranksep: RANKSEP });
  d.setDefaultEdgeLabel(() => ({}));
  g.boxes.forEach((b, i) => d.setNode(String(i), { width: b.w, height: b.h }));
  g.links.forEach(([a, b], i) => d.setEdge(String(a), String(b), {}, String(i)));
  dagre.layout(d);
  const gg = d.graph();
  let bends = 0;
  for (const e of d.edges()) bends += Math.max(0, d.edge(e).points.length - 2);
  return { w: gg.width, h: gg.height, bends };
}

const elk = new ELK();
async function elkOf(g) {
  const out = await elk.layout({
    id: 'root',
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': 'DOWN',
      'elk.spacing.nodeNode': String(NODESEP),
      'elk.layered.spacing.nodeNodeBetweenLayers': String(RANKSEP),
    },
    children: g.boxes.map((b, i) => ({ id: `n${i}`, width: b.w, height: b.h })),
    edges: g.links.map(([a, b], i) => ({ id: `e${i}`, sources: [`n${a}`], targets: [`n${b}`] })),
  });
  let bends = 0;
  for (const e of out.edges ?? []) for (const s of e.sections ?? []) bends += (s.bendPoints ?? []).length;
  return { w: out.width, h: out.height, bends };
}

/** The whole graph as one: every block's boxes, links between blocks through their ref stubs kept as edges. */
function wholeGraph() {
  const boxes = [];
  const links = [];
  for (const g of graphs) {
    const base = boxes.length;
    boxes.push(...g.boxes);
    for (const [a, b, v] of g.links) links.push([a + base, b + base, v]);
  }
  return { boxes, links };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const span = (xs) => `${median(xs).toFixed(0)} ms [${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}]`;

const engines = [
  ['weight-spec (layered-layout.ts)', (s) => ours(s), null],
  // The explorer's other modes: left to right, and edge shape labels placed (edge-labels.ts) in widened gaps.
  ['weight-spec, shape labels placed', (s) => ours(s, 'TB', true), null],
  ['weight-spec, left to right, shape labels placed', (s) => ours(s, 'LR', true), null],
  ['dagre 3.1.3', (s) => dagreOf(graphs[s]), (g) => dagreOf(g)],
  ['elkjs 0.12.1 (layered)', (s) => elkOf(graphs[s]), (g) => elkOf(g)],
];
const nodes = graphs.reduce((a, g) => a + g.boxes.length, 0);
const edges = graphs.reduce((a, g) => a + g.links.length, 0);
console.log(
  `graph layout: DeepSeek-V3 export, ${model.nodes.length} nodes in ${model.sections.length} blocks (${nodes} boxes, ${edges} edges to lay out); ` +
    `load average ${os.loadavg()[0].toFixed(1)}; ${RUNS} runs`,
);
const whole = wholeGraph();
for (const [name, block, all] of engines) {
  const totals = [];
  const slowest = [];
  let area = 0;
  let bends = 0;
  for (let run = 0; run < RUNS; run++) {
    let total = 0;
    let worst = 0;
    area = 0;
    bends = 0;
    for (let s = 0; s < graphs.length; s++) {
      const t0 = performance.now();
      const got = await block(s);
      const ms = performance.now() - t0;
      total += ms;
      worst = Math.max(worst, ms);
      area += got.w * got.h;
      bends += got.bends;
    }
    totals.push(total);
    slowest.push(worst);
  }
  let wholeLine = 'not offered (the explorer lays out blocks)';
  if (all) {
    const t0 = performance.now();
    const got = await all(whole);
    wholeLine = `${(performance.now() - t0).toFixed(0)} ms (1 run), ${(got.w / 1000).toFixed(1)}k × ${(got.h / 1000).toFixed(1)}k px`;
  }
  console.log(`  ${name}`);
  console.log(`    all ${graphs.length} blocks: ${span(totals)}; slowest block ${span(slowest)}`);
  console.log(`    blocks' area ${(area / 1e6).toFixed(1)} Mpx², ${bends} edge bends; the whole graph as one: ${wholeLine}`);
}
