/**
 * `weight-spec compile` and `weight-spec run` as a user runs them, in this process
 * (test/support/cli.ts: the same `main`, streams and exit codes; cli.test.ts covers the process): the
 * messages, exit codes and files of the contract, on exports made in code from the fixtures
 * (compile-support.ts), and the full pipeline of the acceptance criteria for every family
 * and both exporters: export → prepare float32 → compile → run against reference.json.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeFixtures, fixturesDir, LEGACY_FAMILIES } from '../../../test/support/fixtures';
import { cliInProcess } from '../../../test/support/cli';
import { tempDirs } from '../../../test/support/temp';
import { decodeModel, encodeModel } from '../../src/formats/onnx';
import { readSafetensorsHeaderSync } from '../../src/formats/safetensors';
import { makeLegacyExport, makeSyntheticExport, maxAbsDiff, type Reference } from '../support/compile-support';

/** The CLI in this process (the contract is the same; ONNX Runtime loads once, not per call). */
function cli(args: string[], env: Record<string, string> = {}) {
  return cliInProcess(args, { env: { WEIGHT_SPEC_DEBUG: '', ...env } });
}

const tmp = tempDirs('ws-cli-compile-');

/** Tensor data bytes of every safetensors file in a prepared directory. */
function preparedDataBytes(dir: string): number {
  let n = 0;
  for (const f of fs.readdirSync(dir).filter((x) => x.endsWith('.safetensors'))) {
    const h = readSafetensorsHeaderSync(path.join(dir, f));
    for (const t of h.tensors.values()) n += t.byteLength;
  }
  return n;
}

const ref = (fam: string) => JSON.parse(fs.readFileSync(path.join(fixturesDir(), fam, 'reference.json'), 'utf8')) as Reference;

describeFixtures('compile and run through the CLI (made exports)', () => {
  it('compile, compile again (up to date), run --max-new-tokens 5 and --dump-logits', async () => {
    const made = makeLegacyExport(path.join(fixturesDir(), 'phi3', 'legacy.onnx'), tmp());
    const first = await cli(['compile', made.exportDir]);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(
      /^compile: ort → .*\/prepared\/compiled-tiny-[0-9a-f]{12}\.onnx \(\d+ weights .* bound in place, artifact .*; first compile; [\d.]+ ms\)\n$/,
    );
    const second = await cli(['compile', made.exportDir]);
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/^compile: up to date \(fingerprint [0-9a-f]{12}, nothing changed; [\d.]+ ms\)/);
    expect(second.stderr).toBe('');

    const r = ref('phi3');
    const gen = await cli(['run', made.exportDir, '--input-ids', r.input_ids.join(','), '--max-new-tokens', '5']);
    expect(gen.code).toBe(0);
    expect(gen.stdout).toBe(`${r.generated_ids.join(',')}\n`);
    expect(gen.stderr).toMatch(/^run: 5 tokens; time to first token [\d.]+ ms, [\d.]+ tokens\/s \(full graph\)\n$/);

    const out = path.join(made.root, 'logits.json');
    const ids = [...r.input_ids, ...r.generated_ids.slice(0, -1)];
    const dump = await cli(['run', made.exportDir, '--input-ids', ids.join(','), '--dump-logits', out]);
    expect(dump.code).toBe(0);
    expect(dump.stdout).toBe('');
    const logits = (JSON.parse(fs.readFileSync(out, 'utf8')) as { logits: number[][] }).logits;
    expect(maxAbsDiff(logits, r.logits)).toBeLessThanOrEqual(1e-4);
  });

  it('qaic: --dry-run prints the command; without the SDK one line and exit 1', async () => {
    const made = makeSyntheticExport(tmp(), 32, 64, 2);
    const env = { WEIGHT_SPEC_QAIC_COMPILE: '' };
    const dry = await cli(['compile', made.exportDir, '--backend', 'qaic', '--dry-run', '--mxfp6-matmul', '--qaic-option', 'mos=1'], env);
    expect(dry.code).toBe(0);
    const m = dry.stdout.match(/qpc-([0-9a-f]{16})\//);
    const qpc = path.join(made.exportDir, `qpc-${m?.[1]}`);
    // the command (no -compile-only: qaic-compile dropped it), then the file it names, as create_json writes it
    expect(dry.stdout).toBe(
      `/opt/qti-aic/exec/qaic-compile -aic-hw -aic-hw-version=ai100 -m=${made.exportDir}/model.qaic.onnx -convert-to-fp16 ` +
        `-mxfp6-matmul -aic-num-cores=16 -mos=1 -network-specialization-config=${qpc}/specializations.json -aic-binary-dir=${qpc}/qpc\n` +
        `--- ${qpc}/specializations.json\n` +
        '{\n    "specializations":[\n        {\n            "name":"Prefill",\n            "symbols":{\n                "batch_size":"1",\n' +
        '                "seq_len":"32"\n            }\n        }\n    ]\n}\n',
    );
    expect(fs.existsSync(qpc)).toBe(false);
    const noSdk = await cli(['compile', made.exportDir, '--backend', 'qaic'], env);
    expect(noSdk.code).toBe(1);
    expect(noSdk.stdout).toBe('');
    expect(noSdk.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    expect(noSdk.stderr).toMatch(
      /^weight-spec: qaic-compile not found at \/opt\/qti-aic\/exec\/qaic-compile \(QAIC SDK not installed\); would run: \/opt\/qti-aic\/exec\/qaic-compile -aic-hw /,
    );
  });

  it('a graph ONNX Runtime refuses: one line naming model.onnx and the --keep-names hint; no artifact, no record', async () => {
    const made = makeSyntheticExport(tmp(), 32, 64, 2);
    const onnx = path.join(made.exportDir, 'model.onnx');
    const m = decodeModel(fs.readFileSync(onnx), onnx);
    // A node reading a value nothing produces: valid protobuf, an invalid graph.
    m.graph!.node!.push({ opType: 'Relu', input: ['/nowhere/output_0'], output: ['/stray/output_0'] });
    fs.writeFileSync(onnx, encodeModel(m));
    const r = await cli(['compile', made.exportDir]);
    expect(r.code).toBe(1);
    expect(r.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    expect(r.stderr).toMatch(
      /^weight-spec: .*\/export\/model\.onnx: ONNX Runtime refuses the graph bound to its weights: .* \(value names are shortened in the bound model; compile --keep-names keeps the exported ones\)\n$/,
    );
    expect(fs.existsSync(path.join(made.exportDir, 'compile.json'))).toBe(false);
    expect(fs.readdirSync(made.preparedDir).filter((f) => f.startsWith('compiled-'))).toEqual([]);
    const kept = await cli(['compile', made.exportDir, '--keep-names']);
    expect(kept.code).toBe(1);
    expect(kept.stderr).toContain('/nowhere/output_0');
    expect(kept.stderr).not.toContain('--keep-names');
  });

  it('bad input: one line, the right exit code', async () => {
    const d = tmp();
    // A missing path is exit 1 with one sentence (the path contract, issue 15.4; cli-paths.test.ts).
    expect(await cli(['compile', path.join(d, 'nope')])).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/^weight-spec: .*nope: no such file or directory\n$/),
    });
    const none = await cli(['compile', d]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/^weight-spec: .*: no model\.onnx \(no \.onnx file\)\n$/);
    expect(await cli(['run', d, '--input-ids', '1,2'])).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/no compile\.json \(run weight-spec compile .* first\)\n$/),
    });
    expect((await cli(['run', d, '--input-ids', '1,-2'])).code).toBe(2);
    const made = makeLegacyExport(path.join(fixturesDir(), 'llama', 'legacy.onnx'), tmp(), 'F16');
    const dtype = await cli(['compile', made.exportDir]);
    expect(dtype.code).toBe(1);
    expect(dtype.stderr).toMatch(
      /^weight-spec: .*base-0000\.safetensors: tensor ".*" is F16 but graph input ".*" is F32; run `weight-spec prepare --checkpoint .* --dtype float32` and compile with that prepared directory\n$/,
    );
  });
});

/** `export` (from legacy.onnx or config.json) and `prepare --dtype float32` of a fixture, through the CLI. */
async function exportAndPrepare(fam: string, how: 'onnx' | 'config'): Promise<{ root: string; exp: string; prepared: string }> {
  const root = tmp();
  const exp = path.join(root, 'export');
  const prepared = path.join(root, 'prepared');
  const fx = path.join(fixturesDir(), fam);
  const e = await cli(
    how === 'onnx'
      ? ['export', '--onnx', path.join(fx, 'legacy.onnx'), '--checkpoint', fx, '--out', exp]
      : ['export', '--config', fx, '--out', exp],
  );
  expect(e.code, e.stderr).toBe(0);
  const p = await cli(['prepare', '--checkpoint', fx, '--dtype', 'float32', '--out', prepared]);
  expect(p.code, p.stderr).toBe(0);
  return { root, exp, prepared };
}

/** `run --dump-logits` on the reference's ids (prompt + all but the last generated token): max |Δ| against reference.json. */
async function logitsError(fam: string, root: string, exp: string): Promise<number> {
  const r = ref(fam);
  const out = path.join(root, 'logits.json');
  const d = await cli(['run', exp, '--input-ids', [...r.input_ids, ...r.generated_ids.slice(0, -1)].join(','), '--dump-logits', out]);
  expect(d.code, d.stderr).toBe(0);
  return maxAbsDiff((JSON.parse(fs.readFileSync(out, 'utf8')) as { logits: number[][] }).logits, r.logits);
}

describeFixtures('acceptance: export → prepare float32 → compile → run (CLI)', () => {
  for (const fam of LEGACY_FAMILIES) {
    for (const how of ['onnx', 'config'] as const) {
      it(`${fam} (export --${how}): --dump-logits equals reference.json ≤ 1e-4; --max-new-tokens 5 reproduces generated_ids`, async () => {
        const { root, exp, prepared } = await exportAndPrepare(fam, how);
        const c = await cli(['compile', exp, '--prepared', prepared]);
        expect(c.code, c.stderr).toBe(0);
        const rec = JSON.parse(fs.readFileSync(path.join(exp, 'compile.json'), 'utf8'));
        // No weight byte copied: the bound model's own size is ≤ 5 % of the weights, counted
        // here from the prepared shards' headers.
        const weights = preparedDataBytes(prepared);
        expect(rec.stats.weightBytes).toBeLessThanOrEqual(weights);
        expect(rec.stats.weightBytes).toBeGreaterThan(0.9 * weights);
        expect(fs.statSync(rec.artifacts.model).size).toBeLessThanOrEqual(0.05 * weights);
        expect(await logitsError(fam, root, exp)).toBeLessThanOrEqual(1e-4);
        const r = ref(fam);
        const g = await cli(['run', exp, '--input-ids', r.input_ids.join(','), '--max-new-tokens', '5']);
        expect(g.code, g.stderr).toBe(0);
        expect(g.stdout.trim()).toBe(r.generated_ids.join(','));
      });
    }
  }
});

describeFixtures('compile --keep-names', () => {
  it('keeps the graph as exported (names, every Constant) and recompiles when the flag changes; the logits stay the reference', async () => {
    const { root, exp, prepared } = await exportAndPrepare('qwen2', 'config');
    const nodeNames = () => {
      const rec = JSON.parse(fs.readFileSync(path.join(exp, 'compile.json'), 'utf8'));
      const g = decodeModel(fs.readFileSync(rec.artifacts.model), rec.artifacts.model).graph!;
      return g.node!.filter((n) => n.name).length;
    };
    expect((await cli(['compile', exp, '--prepared', prepared])).code).toBe(0);
    expect(nodeNames()).toBe(0);
    const kept = await cli(['compile', exp, '--prepared', prepared, '--keep-names']);
    expect(kept.code, kept.stderr).toBe(0);
    expect(kept.stdout).not.toContain('up to date');
    const exported = decodeModel(fs.readFileSync(path.join(exp, 'model.onnx')), 'model.onnx').graph!.node!;
    expect(nodeNames()).toBe(exported.filter((n) => n.name).length);
    expect(nodeNames()).toBeGreaterThan(0);
    expect(await logitsError('qwen2', root, exp)).toBeLessThanOrEqual(1e-4);
  });
});

describeFixtures("compile checks the prepared directory with prepare's status", () => {
  it('an unfinished prepare (no sentinel) is one clear error; a finished one compiles', async () => {
    const { root, exp, prepared } = await exportAndPrepare('llama', 'config');
    fs.renameSync(path.join(prepared, '.checkpoint_prepared'), path.join(root, 'sentinel'));
    const bad = await cli(['compile', exp, '--prepared', prepared]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^weight-spec: .*has no \.checkpoint_prepared sentinel .*; run weight-spec prepare again\n$/);
    fs.renameSync(path.join(root, 'sentinel'), path.join(prepared, '.checkpoint_prepared'));
    expect((await cli(['compile', exp, '--prepared', prepared])).code).toBe(0);
  });
});

describe('help', () => {
  it('compile and run document their flags', async () => {
    const c = await cli(['compile', '--help']);
    expect(c.code).toBe(0);
    for (const f of ['--backend', '--prepared', '--dry-run', '--qaic-option', '--no-verify', '--keep-names']) expect(c.stdout).toContain(f);
    expect((await cli(['run', '--help'])).stdout).toContain('--dump-logits');
  });
});
