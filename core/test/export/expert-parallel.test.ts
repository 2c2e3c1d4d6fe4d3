/**
 * Expert-parallel end to end through the CLI (in this process): `export --moe-flavour expert_parallel
 * --pipeline-stages P` builds a graph over prepare's packed layout (gate/up `[N, P, H, I]`,
 * down `[N, P, I, H]`, N = E / P as in quic/efficient-transformers release/v1.22.8.0
 * `QEfficient/transformers/models/modeling_auto.py`; slice `[n, p]` = expert p·N + n), and
 * export → prepare → compile → run gives the plain export's logits — judged by the fixture's
 * reference.json (mixtral here; glm4_moe and gpt_oss_full in export-moe-families.test.ts) and by the
 * float64 reference forward (qwen3_moe made in code).
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { cliInProcess, cliStdout } from '../../../test/support/cli';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { summarizeOnnxSync } from '../../src/formats/onnx';
import { SYNTHETIC_CONFIGS, writeRandomModel } from '../support/graph-random';
import { referenceForward } from '../support/graph-reference';
import { maxAbsDiff } from '../support/graph-support';

const tmp = tempDirs('ws-ep-');
/** The CLI in this process (test/support/cli.ts); the stdout of a successful call. */
const ws = (...args: string[]): Promise<string> => cliStdout(undefined, ...args);

/** export → prepare → compile → run --dump-logits with the given MoE flags; returns the logits rows. */
async function pipeline(root: string, src: string, tag: string, ids: number[], moe: string[]): Promise<number[][]> {
  const out = path.join(root, `export-${tag}`);
  await ws('export', '--config', src, '--out', out, '--ctx-len', '32', ...moe);
  const prepared = (await ws('prepare', '--checkpoint', src, '--dtype', 'float32', ...moe)).trim().split('\n').pop()!;
  await ws('compile', out, '--prepared', prepared);
  const dump = path.join(root, `logits-${tag}.json`);
  await ws('run', out, '--input-ids', ids.join(','), '--dump-logits', dump);
  return (JSON.parse(fs.readFileSync(dump, 'utf8')) as { logits: number[][] }).logits;
}

describeFixtures('expert_parallel export consumes the packed layout', () => {
  it('mixtral (4 experts): plain, P = 2 and P = 4 reproduce reference.json within 1e-4', async () => {
    const root = tmp();
    const src = path.join(root, 'mixtral');
    fs.cpSync(path.join(fixturesDir(), 'mixtral'), src, { recursive: true });
    const ref = JSON.parse(fs.readFileSync(path.join(src, 'reference.json'), 'utf8')) as {
      input_ids: number[];
      generated_ids: number[];
      logits: number[][];
    };
    const ids = [...ref.input_ids, ...ref.generated_ids.slice(0, -1)];
    const plain = await pipeline(root, src, 'plain', ids, []);
    expect(maxAbsDiff(plain, ref.logits)).toBeLessThanOrEqual(1e-4);
    for (const P of [2, 4]) {
      const rows = await pipeline(root, src, `ep${P}`, ids, ['--moe-flavour', 'expert_parallel', '--pipeline-stages', String(P)]);
      expect(maxAbsDiff(rows, ref.logits)).toBeLessThanOrEqual(1e-4);
      expect(maxAbsDiff(rows, plain)).toBeLessThanOrEqual(1e-5);
      // the graph takes the packed tensors: gate [N, P, H, I], down [N, P, I, H] (H = 64, I = 96)
      const inputs = new Map(summarizeOnnxSync(path.join(root, `export-ep${P}`, 'model.onnx')).inputs.map((i) => [i.name, i.dims]));
      expect(inputs.get('model.layers.0.block_sparse_moe.moe_weights.gate')).toEqual([4 / P, P, 64, 96]);
      expect(inputs.get('model.layers.0.block_sparse_moe.moe_weights.down')).toEqual([4 / P, P, 96, 64]);
    }
  }, 300_000);

  // glm4_moe and gpt_oss_full: plain and P = 2 against reference.json run in export-moe-families.test.ts.

  it('qwen3_moe (6 experts, code-made bf16 checkpoint): P = 2 and P = 3 equal the float64 reference', async () => {
    const root = tmp();
    const cfg = SYNTHETIC_CONFIGS.qwen3_moe!;
    const src = path.join(root, 'qwen3_moe');
    const raw = await writeRandomModel(src, cfg, 5);
    const ids = [4, 19, 33, 7, 61, 2, 45];
    const ref = referenceForward(cfg, raw, ids);
    for (const P of [2, 3]) {
      const rows = await pipeline(root, src, `ep${P}`, ids, ['--moe-flavour', 'expert_parallel', '--pipeline-stages', String(P)]);
      expect(maxAbsDiff(rows, ref)).toBeLessThanOrEqual(1e-4);
    }
  }, 300_000);

  it('export refuses P that does not divide the experts, and expert_parallel on a dense model (exit 2)', async () => {
    const root = tmp();
    for (const [src, P, msg] of [
      [path.join(fixturesDir(), 'mixtral'), '3', /4 experts \(E\) do not split into 3 pipeline stages \(P\)/],
      [path.join(fixturesDir(), 'llama'), '2', /--moe-flavour expert_parallel, but this model has no MoE experts/],
    ] as const) {
      const r = await cliInProcess([
        'export',
        '--config',
        src,
        '--out',
        path.join(root, 'x'),
        '--moe-flavour',
        'expert_parallel',
        '--pipeline-stages',
        P,
      ]);
      expect(r.code).toBe(2);
      expect(r.stderr.split('\n')[0]).toMatch(msg);
      expect(fs.existsSync(path.join(root, 'x'))).toBe(false);
    }
  });
});
