/**
 * QEfficient's newer conventions (issue 47, item 6), against quic/efficient-transformers:
 * - `get_default_aic_hw_version` (`QEfficient/utils/constants.py`, main ebf55e81): the first
 *   `FW IMAGE_VARIANT : <v>` of `qaic-util -q`, AIC200 in it → ai200, else ai100 (no field: ai100
 *   as well; here undefined, the caller's default). The `NSP IMAGE_VARIANT` form was an unmerged PR's.
 * - the prepared folder (`QEfficient/exporter/weight_free/export.py`
 *   `_prepare_checkpoint_for_weight_free_export`; `QEfficient/utils/cache.py` QEFF_CHECKPOINT_HOME):
 *   `-qeff-prepared-<dtype>` (PR head 277283b5, written) and `-wf-<dtype>` (a later branch, read),
 *   under `QEFF_CHECKPOINT_HOME` (or `QEFF_WF_HOME`) when set, else beside the source.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { hwVersionFromQaicUtil } from '../../src/artifacts/qaic-plan';
import { isQeffPreparedName, looksPreparedName, qeffCheckpointHome } from '../../src/artifacts/prepared-folder';
import { preparedDirFor } from '../../src/export/exporter/layout';
import { isQeffPrepared } from '../../src/prepare';
import { tempDirs } from '../../../test/support/temp';
import { cliInProcess } from '../../../test/support/cli';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { maxAbsDiff } from '../support/compile-support';
import { dumpLogits, reference } from '../support/serving-support';

const tmp = tempDirs('ws-qeff-conv-');

it('-aic-hw-version from qaic-util -q: the first FW IMAGE_VARIANT, AIC200 → ai200, else ai100', () => {
  expect(hwVersionFromQaicUtil('QID 0\n\tFW IMAGE_VARIANT:AIC200_STD\n')).toBe('ai200');
  expect(hwVersionFromQaicUtil('QID 0\n\tFW IMAGE_VARIANT : aic200_pro\n')).toBe('ai200');
  expect(hwVersionFromQaicUtil('QID 0\n\tFW IMAGE_VARIANT:AIC100_STD\n')).toBe('ai100');
  expect(hwVersionFromQaicUtil('QID 0\n\tFW IMAGE_VARIANT:SOMETHING\n')).toBe('ai100');
  // the first device decides (re.search)
  expect(hwVersionFromQaicUtil('QID 0\n\tFW IMAGE_VARIANT:AIC100_STD\nQID 1\n\tFW IMAGE_VARIANT:AIC200_STD\n')).toBe('ai100');
  // the NSP field alone is not read
  expect(hwVersionFromQaicUtil('QID 0\n\tNSP IMAGE_VARIANT:AIC200_STD\n')).toBeUndefined();
});

it('both QEfficient names are recognised; only prepare dtypes after -wf-', () => {
  expect(isQeffPreparedName('llama-qeff-prepared-float32')).toBe(true);
  expect(isQeffPreparedName('llama-wf-bfloat16')).toBe(true);
  expect(isQeffPreparedName('llama-wf-float16')).toBe(true);
  expect(isQeffPreparedName('llama-wf-int4')).toBe(false);
  expect(isQeffPreparedName('llama-wf')).toBe(false);
  expect(looksPreparedName('/models/Qwen3-wf-float32')).toBe(true);
});

it('QEFF_CHECKPOINT_HOME (else QEFF_WF_HOME) is where the -qeff-prepared-<dtype> folder goes; unset: beside the source', () => {
  const root = tmp();
  const src = path.join(root, 'models', 'tiny-llama');
  expect(preparedDirFor(src, 'float32', {})).toBe(path.join(root, 'models', 'tiny-llama-qeff-prepared-float32'));
  expect(preparedDirFor(src, 'bfloat16', { QEFF_CHECKPOINT_HOME: path.join(root, 'ckpt') })).toBe(
    path.join(root, 'ckpt', 'tiny-llama-qeff-prepared-bfloat16'),
  );
  expect(preparedDirFor(src, 'float16', { QEFF_WF_HOME: path.join(root, 'wf') })).toBe(
    path.join(root, 'wf', 'tiny-llama-qeff-prepared-float16'),
  );
  expect(qeffCheckpointHome({ QEFF_CHECKPOINT_HOME: '~/qeff', HOME: '/home/u' })).toBe('/home/u/qeff');
  expect(qeffCheckpointHome({ QEFF_CHECKPOINT_HOME: '', QEFF_WF_HOME: '' })).toBeUndefined();
});

it('a folder QEfficient prepared under the newer name (sentinel, no manifest of ours) is taken for QEfficient’s', () => {
  const root = tmp();
  for (const name of ['tiny-wf-float32', 'tiny-qeff-prepared-float32', 'tiny-other-float32']) {
    const d = path.join(root, name);
    fs.mkdirSync(d);
    fs.writeFileSync(path.join(d, '.checkpoint_prepared'), '');
  }
  expect(isQeffPrepared(path.join(root, 'tiny-wf-float32'))).toBe(true);
  expect(isQeffPrepared(path.join(root, 'tiny-qeff-prepared-float32'))).toBe(true);
  expect(isQeffPrepared(path.join(root, 'tiny-other-float32'))).toBe(false);
});

describeFixtures('a folder QEfficient prepared under -wf-<dtype> binds (llama fixture)', () => {
  it('compile --prepared <name>-wf-float32 (sentinel, no manifest) says so and runs the reference logits', async () => {
    const root = tmp();
    const ok = async (args: string[]) => {
      const r = await cliInProcess(args, { cwd: root });
      expect(r.code, r.stderr).toBe(0);
      return r;
    };
    // QEfficient's folder: the prepared files and its sentinel, no manifest of ours
    const made = path.join(root, 'made');
    await ok(['prepare', '--checkpoint', path.join(fixturesDir(), 'llama'), '--dtype', 'float32', '--out', made]);
    const wf = path.join(root, 'llama-wf-float32');
    fs.cpSync(made, wf, { recursive: true });
    fs.rmSync(path.join(wf, '.checkpoint_prepared.json'));
    const out = path.join(root, 'export');
    await ok(['export', '--config', path.join(fixturesDir(), 'llama'), '--out', out, '--ctx-len', '32']);
    const r = await ok(['compile', out, '--prepared', wf]);
    expect(r.stderr).toContain(`${wf} was prepared by QEfficient (sentinel, no manifest): bound as it is`);
    const ref = reference('llama');
    const ids = [...ref.input_ids, ...ref.generated_ids.slice(0, -1)];
    expect(maxAbsDiff(await dumpLogits(root, out, ids), ref.logits)).toBeLessThanOrEqual(1e-4);
  });
});
