/**
 * The editor's viewers on a Whisper export (core/src/view): each graph folder's model.onnx opens
 * as an ONNX page whose runtime inputs are the interface (input_features; input_ids,
 * position_ids, encoder_hidden_states and the self / cross caches) and whose weights are exactly
 * its spec's inputs, the embedded spec checked with no problem once prepared; the graph explorer
 * builds its model of both graphs. Expected names come from each folder's weight_spec.json and
 * export-report.json (read with JSON.parse). The editor's Export Model pick lists a cached Whisper
 * checkpoint as supported.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliStdout } from '../../../test/support/cli';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { buildViewerPage, graphModelOf } from '../../src/view';
import { listCachedModels } from '../../src/editor/cached-models';

const tmp = tempDirs('ws-whisper-view-');

describeFixtures('viewers on a Whisper export', () => {
  let out: string;
  beforeAll(async () => {
    const work = tmp();
    fs.cpSync(path.join(fixturesDir(), 'whisper'), path.join(work, 'model'), { recursive: true });
    for (const f of fs.readdirSync(path.join(work, 'model'))) fs.chmodSync(path.join(work, 'model', f), 0o644);
    await cliStdout(work, 'export', '--config', 'model', '--out', 'wx');
    await cliStdout(work, 'prepare', '--checkpoint', 'model', '--dtype', 'float32');
    out = path.join(work, 'wx');
  }, 60_000);

  for (const g of ['encoder', 'decoder']) {
    it(`${g}/model.onnx: runtime inputs, weights = the spec's inputs, embedded spec without problems, graph model`, async () => {
      const file = path.join(out, g, 'model.onnx');
      const r = await buildViewerPage(file);
      if (r.page.kind !== 'onnx') throw new Error(`expected an ONNX page, got ${JSON.stringify(r.page)}`);
      const page = r.page;
      const spec = JSON.parse(fs.readFileSync(path.join(out, g, 'weight_spec.json'), 'utf8')) as { inputs: { name: string }[] };
      const report = JSON.parse(fs.readFileSync(path.join(out, g, 'export-report.json'), 'utf8'));
      expect(page.inputs.map((v) => v.name)).toEqual(report.graph.inputs);
      expect(page.outputs.map((v) => v.name)).toEqual(report.graph.outputs);
      expect(page.weightGroups.flatMap((x) => x.weights.map((w) => w.name)).sort()).toEqual(spec.inputs.map((i) => i.name).sort());
      expect(page.spec!.problems).toEqual([]);
      const gx = graphModelOf(r.graph!, file, r.graph!.values);
      expect(gx.nodes.length).toBeGreaterThan(0);
    });
  }
});

describe("the editor's Export Model pick", () => {
  it('lists a cached Whisper checkpoint as supported', () => {
    const cache = tmp();
    const commit = 'a'.repeat(40);
    const snap = path.join(cache, 'models--openai--whisper-tiny', 'snapshots', commit);
    fs.mkdirSync(snap, { recursive: true });
    fs.writeFileSync(path.join(snap, 'config.json'), JSON.stringify({ model_type: 'whisper', d_model: 384 }));
    fs.mkdirSync(path.join(cache, 'models--openai--whisper-tiny', 'refs'));
    fs.writeFileSync(path.join(cache, 'models--openai--whisper-tiny', 'refs', 'main'), commit);
    const got = listCachedModels({ HF_HUB_CACHE: cache });
    expect(got.map((m) => [m.id, m.modelType, m.supported])).toEqual([['openai/whisper-tiny', 'whisper', true]]);
  });
});
