/**
 * Disaggregated prefill for a vision-language model (issue 47 item 3, "the VLM language graph gets
 * `--phase prefill` too"), on the `llava` fixture through the CLI: `export --config … --phase
 * prefill` writes the language graph QEfficient compiles into `lang_prefill_qpc_path`
 * (quic/efficient-transformers main ebf55e8159c8b87bff6d8028541b824244b16c81,
 * `QEfficient/transformers/models/modeling_auto.py` `_QEffAutoModelForImageTextToTextDualQPC.export`
 * / `compile` with `prefill_only=True`: `QEffCausalLMForTextImageToTextModel.export` records
 * `hash_params["prefill_only"] = True` and applies `PrefillOnlyTransform`, which swaps no module
 * of a LLaVA text model). The graph records its phase where the text decoder records it
 * (`weight_spec.phase`, read here by python's onnx, not our reader) and in its export report; the
 * vision graph is untouched. Run on ONNX Runtime, the prefill-only graph reproduces the fixture's
 * reference.json (HF transformers): every logit row within 1e-4, the same generated_ids. The
 * qaic side (the Prefill entries only) is qaic-recording-vlm.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { BUILT_VLMS, describeFixtures } from '../../../test/support/fixtures';
import { haveOnnxChecker, PYTHON } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';
import { dumpedLogits, expectGeneratedIds, expectGraphsAndArtifactsValid, maxDiff, vlmFixtureCli } from '../../../test/support/vlm-cli';

const tmp = tempDirs('ws-vlm-prefill-');

/** The metadata_props of an ONNX file, read by python's onnx. */
function onnxMetadata(file: string): Record<string, string> {
  const r = spawnSync(
    PYTHON,
    [
      '-c',
      'import json, sys, onnx; m = onnx.load(sys.argv[1], load_external_data=False); print(json.dumps({p.key: p.value for p in m.metadata_props}))',
      file,
    ],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`python: ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<string, string>;
}

// llava is a built VLM fixture (test/support/fixtures.ts BUILT_VLMS); describeFixtures skips with a notice when it is absent
if (BUILT_VLMS.includes('llava'))
  describeFixtures('llava: export --phase prefill (the prefill-only language graph) through the CLI', () => {
    const { fx, ref, h, begin } = vlmFixtureCli('llava', tmp);
    let work = '';

    beforeAll(async () => {
      work = begin();
      await h.ok('export', '--config', 'model', '--out', 'out', '--phase', 'prefill');
      await h.ok('prepare', '--checkpoint', 'model', '--dtype', 'float32');
      await h.ok('compile', 'out');
    }, 120_000);

    it.runIf(haveOnnxChecker())(
      'the language graph records weight_spec.phase prefill (and its report phase); the vision graph records none',
      () => {
        expect(onnxMetadata(path.join(work, 'out', 'language', 'model.onnx'))['weight_spec.phase']).toBe('prefill');
        expect(onnxMetadata(path.join(work, 'out', 'vision', 'model.onnx'))['weight_spec.phase']).toBeUndefined();
        const report = (g: string) => JSON.parse(readFileSync(path.join(work, 'out', g, 'export-report.json'), 'utf8'));
        expect(report('language').options.phase).toBe('prefill');
        expect(report('vision').options.phase).toBeUndefined();
      },
    );

    it('run on the prefill-only export: --dump-logits within 1e-4 of the reference on every row, and its generated_ids', async () => {
      const source = ['--pixel-values', path.join(fx, 'reference.json')];
      const got = await dumpedLogits(h, source, ref);
      expect(maxDiff(got.flat(), (ref.logits as number[][]).flat())).toBeLessThan(1e-4);
      await expectGeneratedIds(h, 'out', source, ref);
    });

    it('refuses --phase decode and --enable-chunking for a VLM (exit 2, one line), writing nothing', async () => {
      for (const [flags, msg] of [
        [['--phase', 'decode'], /--phase decode is not supported for vision-language models/],
        [
          ['--phase', 'prefill', '--enable-chunking'],
          /--enable-chunking goes with --phase prefill of a disaggregated-serving model .*not a vision-language model/,
        ],
      ] as const) {
        const r = await h.cliRun('export', '--config', 'model', '--out', 'refused', ...flags);
        expect(r.code, flags.join(' ')).toBe(2);
        // a usage error: its one line first, then the command's usage
        expect(r.stderr.split('\n')[0]).toMatch(msg);
        expect(existsSync(path.join(work, 'refused'))).toBe(false);
      }
    });

    it.runIf(haveOnnxChecker())("both graphs and their compiled artifacts pass ONNX's checker", () => {
      expectGraphsAndArtifactsValid(work, ['out/vision', 'out/language']);
    });
  });
