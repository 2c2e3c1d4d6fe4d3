/**
 * Graph inputs are named by the module's parameter path, as QEfficient names them
 * (`torch.onnx.export` of the QEff causal-LM module: `transformer.wte.weight` for GPT-2), and
 * the spec maps each to the checkpoint key (`wte.weight` in the GPT-2 fixture, saved without
 * the prefix); `model_name` is the architecture class, as QEfficient's
 * `QEfficient/exporter/weight_free/weight_spec.py` writes `model_name` (the model class name).
 * Both exporters, and the pipeline still runs through the renamed inputs.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { describeFixtures, fixturesDir, REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { summarizeOnnxSync } from '../../src/formats/onnx';
import { readSafetensorsHeaderSync } from '../../src/formats/safetensors';
import { parseSpecText } from '../../src/spec';
import { maxAbsDiff } from '../support/graph-support';

const tmp = tempDirs('ws-input-names-');
const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');

function ws(...args: string[]): string {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off' } });
  if (r.status !== 0) throw new Error(`weight-spec ${args.join(' ')} → exit ${r.status}: ${r.stderr.trim()}`);
  return r.stdout;
}

function specOf(out: string) {
  return parseSpecText(fs.readFileSync(path.join(out, 'weight_spec.json'), 'utf8'), 'weight_spec.json').spec!;
}

describeFixtures('input names = parameter paths; keys = checkpoint keys; model_name = architecture class', () => {
  it('gpt2 (keys without transformer.): both exporters name inputs transformer.*, keys stay wte.weight…; llama: LlamaForCausalLM', () => {
    const root = tmp();
    const gpt2 = path.join(fixturesDir(), 'gpt2');
    // the fixture's keys have no prefix (saved from GPT2Model)
    const keys = new Set(readSafetensorsHeaderSync(path.join(gpt2, 'model.safetensors')).tensors.keys());
    expect(keys.has('wte.weight') && !keys.has('transformer.wte.weight')).toBe(true);
    for (const [kind, args] of [
      ['config', ['--config', gpt2, '--ctx-len', '16']],
      ['onnx', ['--onnx', path.join(gpt2, 'legacy.onnx'), '--checkpoint', gpt2]],
    ] as const) {
      const out = path.join(root, `gpt2-${kind}`);
      ws('export', ...args, '--out', out);
      const spec = specOf(out);
      const wte = spec.inputs.find((i) => i.location.key === 'wte.weight');
      expect(wte?.name, kind).toBe('transformer.wte.weight');
      for (const i of spec.inputs) {
        expect(i.name.startsWith('transformer.') || i.name === 'lm_head.weight', `${kind}: ${i.name}`).toBe(true);
        expect(i.location.key).toBe(i.name.replace(/^transformer\./, ''));
      }
      expect(spec.model_name).toBe('GPT2LMHeadModel');
      const graphInputs = new Set(summarizeOnnxSync(path.join(out, 'model.onnx')).inputs.map((i) => i.name));
      for (const i of spec.inputs) expect(graphInputs.has(i.name), i.name).toBe(true);
    }
    const llama = path.join(root, 'llama');
    ws('export', '--config', path.join(fixturesDir(), 'llama'), '--out', llama);
    expect(specOf(llama).model_name).toBe('LlamaForCausalLM');
  });

  it('gpt2: export → prepare → compile → run binds the renamed inputs and reproduces reference.json', () => {
    const root = tmp();
    const src = path.join(root, 'gpt2');
    fs.cpSync(path.join(fixturesDir(), 'gpt2'), src, { recursive: true });
    const ref = JSON.parse(fs.readFileSync(path.join(src, 'reference.json'), 'utf8')) as {
      input_ids: number[];
      generated_ids: number[];
      logits: number[][];
    };
    const out = path.join(root, 'export');
    ws('export', '--config', src, '--out', out, '--ctx-len', '32');
    const prepared = ws('prepare', '--checkpoint', src, '--dtype', 'float32').trim().split('\n').pop()!;
    ws('compile', out, '--prepared', prepared);
    const dump = path.join(root, 'logits.json');
    ws('run', out, '--input-ids', [...ref.input_ids, ...ref.generated_ids.slice(0, -1)].join(','), '--dump-logits', dump);
    expect(maxAbsDiff((JSON.parse(fs.readFileSync(dump, 'utf8')) as { logits: number[][] }).logits, ref.logits)).toBeLessThanOrEqual(1e-4);
  }, 120_000);
});
