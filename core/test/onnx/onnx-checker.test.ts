/**
 * Every graph this tool writes passes ONNX's own checker with strict shape inference
 * (Debian python3-onnx 1.12, `test/support/onnx-checker.ts`): config-path exports of every
 * supported family (fixture configs, else the code-made configs), with the variants that
 * change the graph (float16, continuous batching, prefill/decode, expert-parallel MoE), the
 * ONNX-path exports of the fixtures' legacy graphs, and compiled ORT artifacts. The default
 * opset is 17, QEfficient's `ONNX_EXPORT_OPSET` (quic/efficient-transformers release/v1.22.8.0
 * `QEfficient/utils/constants.py`); onnx 1.12 knows no opset 18, so the opset-18 graphs of
 * before failed here. `--opset 18…21` moves `ReduceMean`'s axes from attribute to input.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  builtTextFixture,
  describeFixtures,
  fixtureBuilt,
  fixturesDir,
  LEGACY_FAMILIES,
  LEGACY_ONNX_FOLDERS,
  REPO_ROOT,
} from '../../../test/support/fixtures';
import { describeOnnxChecker, expectOnnxValid } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';
import { SUPPORTED_MODEL_TYPES } from '../../src/export/families/registry';
import { exportFromConfig, type ConfigExportOptions } from '../../src/export/export-config';
import { planLayout } from '../../src/export/exporter/plan-layout';
import { readModel } from '../../src/formats/onnx';
import { SYNTHETIC_CONFIGS } from '../support/graph-random';

const tmp = tempDirs('ws-onnx-checker-');
const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');

function ws(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off' } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function ok(...args: string[]): string {
  const r = ws(...args);
  if (r.code !== 0) throw new Error(`weight-spec ${args.join(' ')} → exit ${r.code}: ${r.stderr.trim()}`);
  return r.stdout;
}

/** A config-only model directory (derived prepared layout) for `cfg`. */
function configDir(root: string, name: string, cfg: Record<string, unknown>): string {
  const d = path.join(root, name);
  fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(path.join(d, 'config.json'), JSON.stringify(cfg));
  return d;
}

/** A config for every supported model type: the fixture's when one ships, else a code-made one. */
function familyConfigs(): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>();
  for (const [name, cfg] of Object.entries(SYNTHETIC_CONFIGS)) out.set(`synthetic-${name}`, cfg);
  // every fixture that is a whole model (it has reference logits) of a supported type — not the
  // experts-only gpt_oss folder, whose config describes no attention
  for (const name of fs.readdirSync(fixturesDir())) {
    const f = path.join(fixturesDir(), name, 'config.json');
    if (!fs.existsSync(f) || !fs.existsSync(path.join(fixturesDir(), name, 'reference.json'))) continue;
    if (!builtTextFixture(name)) continue;
    const cfg = JSON.parse(fs.readFileSync(f, 'utf8')) as Record<string, unknown>;
    if ((SUPPORTED_MODEL_TYPES as readonly unknown[]).includes(cfg.model_type)) out.set(name, cfg);
  }
  return out;
}

describeFixtures('ONNX checker (python3-onnx 1.12, strict shape inference)', () => {
  describeOnnxChecker('every exported and compiled graph', () => {
    it('config path: every supported family, opset 17, with the variants that change the graph', async () => {
      const root = tmp();
      const configs = familyConfigs();
      // a new family must come with a config the checker can see (fixture or SYNTHETIC_CONFIGS)
      for (const type of SUPPORTED_MODEL_TYPES)
        expect(
          [...configs.values()].some((c) => c.model_type === type),
          `no config for ${type}`,
        ).toBe(true);
      const files: string[] = [];
      for (const [name, cfg] of configs) {
        const dir = configDir(root, name, cfg);
        const variants: [string, Partial<ConfigExportOptions>][] = [
          ['f32', { ctxLen: 32 }],
          ['f16-cb', { dtype: 'float16', continuousBatching: true, batchSize: 2 }],
          ['decode', { phase: 'decode' }],
        ];
        const experts = (cfg.num_local_experts ?? cfg.num_experts ?? cfg.n_routed_experts) as number | undefined;
        if (experts && experts % 2 === 0) variants.push(['ep2', { expertParallel: { stages: 2 } }]);
        for (const [v, o] of variants) {
          const out = path.join(root, `${name}-${v}`);
          await exportFromConfig({ config: dir, out, planner: planLayout, ...o });
          files.push(path.join(out, 'model.onnx'));
        }
      }
      // the fixtures' model directories hold checkpoints: the layout is planned by prepare's planner
      for (const fam of LEGACY_FAMILIES) {
        const out = path.join(root, `${fam}-planned`);
        await exportFromConfig({ config: path.join(fixturesDir(), fam), out, ctxLen: 32, planner: planLayout });
        files.push(path.join(out, 'model.onnx'));
      }
      const res = expectOnnxValid(files);
      for (const r of res) expect(r.opset).toEqual([17]);
      const m = await readModel(files[0]!);
      expect(m.irVersion).toBe(8);
    }, 300_000);

    it('ONNX path: every fixture legacy graph, converted', () => {
      const root = tmp();
      // every fixture with a single legacy.onnx whose ONNX path is built (the VLMs ship two graphs: their tests cover them)
      const families = LEGACY_ONNX_FOLDERS.filter((f) => fixtureBuilt(f, 'onnx'));
      const files = families.map((fam) => {
        const out = path.join(root, `${fam}-onnx`);
        ok('export', '--onnx', path.join(fixturesDir(), fam, 'legacy.onnx'), '--checkpoint', path.join(fixturesDir(), fam), '--out', out);
        return path.join(out, 'model.onnx');
      });
      expect(files.length).toBeGreaterThanOrEqual(LEGACY_FAMILIES.length);
      expectOnnxValid(files);
    }, 300_000);

    it('compiled ORT artifacts (dense, MoE, expert-parallel MoE) pass too', () => {
      const root = tmp();
      const src = path.join(root, 'src');
      fs.mkdirSync(src);
      for (const fam of ['llama', 'mixtral']) fs.cpSync(path.join(fixturesDir(), fam), path.join(src, fam), { recursive: true });
      const files: string[] = [];
      for (const [fam, extra] of [
        ['llama', []],
        ['mixtral', []],
        ['mixtral', ['--moe-flavour', 'expert_parallel', '--pipeline-stages', '2']],
      ] as const) {
        const out = path.join(root, `${fam}-${extra.length ? 'ep' : 'plain'}`);
        ok('export', '--config', path.join(src, fam), '--out', out, '--ctx-len', '32', ...extra);
        const prepared = ok('prepare', '--checkpoint', path.join(src, fam), '--dtype', 'float32', ...extra)
          .trim()
          .split('\n')
          .pop()!;
        ok('compile', out, '--prepared', prepared);
        const rec = JSON.parse(fs.readFileSync(path.join(out, 'compile.json'), 'utf8')) as { artifacts: { model: string } };
        files.push(path.resolve(out, rec.artifacts.model));
      }
      expectOnnxValid(files);
    }, 300_000);
  });
});

describe('--opset', () => {
  it('17 by default with ReduceMean axes as an attribute; 18…21 as an input; others are usage errors', async () => {
    const root = tmp();
    const dir = configDir(root, 'llama', SYNTHETIC_CONFIGS['llama-rope-llama3']!);
    const reduceMeans = async (out: string) => {
      const m = await readModel(path.join(out, 'model.onnx'));
      return {
        opset: (m.opsetImport ?? []).find((o) => !o.domain)!.version,
        ir: m.irVersion,
        nodes: (m.graph?.node ?? []).filter((n) => n.opType === 'ReduceMean'),
      };
    };
    ok('export', '--config', dir, '--out', path.join(root, 'o17'));
    const d = await reduceMeans(path.join(root, 'o17'));
    expect([d.opset, d.ir]).toEqual([17, 8]);
    expect(d.nodes.length).toBeGreaterThan(0);
    for (const n of d.nodes) {
      expect(n.input).toHaveLength(1);
      expect((n.attribute ?? []).find((a) => a.name === 'axes')?.ints).toEqual([-1]);
    }
    for (const [opset, ir] of [
      [18, 8],
      [19, 9],
      [20, 9],
      [21, 10],
    ] as const) {
      ok('export', '--config', dir, '--out', path.join(root, `o${opset}`), '--opset', String(opset));
      const r = await reduceMeans(path.join(root, `o${opset}`));
      expect([r.opset, r.ir]).toEqual([opset, ir]);
      for (const n of r.nodes) {
        expect(n.input).toHaveLength(2);
        expect((n.attribute ?? []).some((a) => a.name === 'axes')).toBe(false);
      }
    }
    for (const bad of ['16', '22']) {
      const r = ws('export', '--config', dir, '--out', path.join(root, `bad${bad}`), '--opset', bad);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`^weight-spec: --opset must be one of 17, 18, 19, 20, 21 \\(got ${bad}\\)`));
      expect(fs.existsSync(path.join(root, `bad${bad}`))).toBe(false);
    }
  });
});
