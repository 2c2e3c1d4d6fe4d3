/**
 * The VLM graphs name their dims as QEfficient main's `get_onnx_dynamic_axes` does
 * (quic/efficient-transformers main ebf55e8159c8b87bff6d8028541b824244b16c81), so the qaic
 * specializations (qaic-recording-vlm.test.ts) name every symbolic dim:
 * - Qwen2.5-VL (`qwen2_5_vl/modeling_qwen2_5_vl.py`): `pixel_values {0: grid_height, 1: grid_width}`,
 *   `image_grid_thw {0: batch_size, 2: grid_h, 3: grid_w}` — dim 1 is the dummy grid's 1, no `time`;
 * - Qwen3-VL (`qwen3_vl_moe/modeling_qwen3_vl_moe.py`): `deepstack_features {0: num_feature_layers,
 *   1: batch_size | vision_batch_size, 2: vision_size}` in both graphs, `image_grid_thw` with `time`;
 * - Gemma 3 (`gemma3/modeling_gemma3.py`): `vision_embeds {0: vision_batch_size, 1: vision_size}`
 *   (#1029 renamed the symbol from mm_tokens_per_image; dim 1 is no longer fixed).
 * Each export is made from the fixture's config.json alone (derived layout), the dims read back
 * from model.onnx.
 */
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { parseWireModel } from '../../src/formats/onnx/wire-model';
import { cliInProcess } from '../../../test/support/cli';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-vlm-iface-');

/** `export --config` of the fixture's config.json; dims of each graph's inputs and outputs by name. */
async function exportedDims(fixture: string): Promise<Record<'vision' | 'language', Map<string, (number | string)[]>>> {
  const work = tmp();
  mkdirSync(path.join(work, 'model'));
  copyFileSync(path.join(fixturesDir(), fixture, 'config.json'), path.join(work, 'model', 'config.json'));
  const r = await cliInProcess(['export', '--config', 'model', '--out', 'out'], { cwd: work });
  expect(r.code, r.stderr).toBe(0);
  const dims = (g: string) => {
    const file = path.join(work, 'out', g, 'model.onnx');
    const m = parseWireModel(readFileSync(file), file);
    return new Map([...m.inputs, ...m.outputs].map((v) => [v.name, v.dims]));
  };
  return { vision: dims('vision'), language: dims('language') };
}

describeFixtures("the VLM graphs' symbols are QEfficient main's", () => {
  it('Qwen2.5-VL: pixel_values [grid_height, grid_width]; image_grid_thw [batch_size, 1, grid_h, grid_w]', async () => {
    const d = await exportedDims('qwen2_5_vl');
    expect(d.vision.get('pixel_values')).toEqual(['grid_height', 'grid_width']);
    expect(d.vision.get('image_grid_thw')).toEqual(['batch_size', 1, 'grid_h', 'grid_w']);
    expect(d.language.get('vision_embeds')).toEqual(['vision_batch_size', 'vision_size', 64]);
  });

  it('Qwen3-VL: deepstack_features dim 0 is num_feature_layers in both graphs; image_grid_thw keeps time', async () => {
    const d = await exportedDims('qwen3_vl_moe');
    expect(d.vision.get('pixel_values')).toEqual(['grid_height', 'grid_width']);
    expect(d.vision.get('image_grid_thw')).toEqual(['batch_size', 'time', 'grid_h', 'grid_w']);
    expect(d.vision.get('deepstack_features')!.slice(0, 3)).toEqual(['num_feature_layers', 'batch_size', 'vision_size']);
    expect(d.language.get('deepstack_features')!.slice(0, 3)).toEqual(['num_feature_layers', 'vision_batch_size', 'vision_size']);
    expect(d.language.get('deepstack_features_RetainedState')!.slice(0, 3)).toEqual([
      'num_feature_layers',
      'vision_batch_size',
      'vision_size',
    ]);
  });

  it('Gemma 3: vision_embeds [vision_batch_size, vision_size, hidden] in the language graph (dim 1 dynamic)', async () => {
    const d = await exportedDims('gemma3_vlm');
    expect(d.language.get('vision_embeds')).toEqual(['vision_batch_size', 'vision_size', 64]);
    expect(d.language.get('vision_embeds_RetainedState')).toEqual(['vision_batch_size', 'vision_size', 64]);
  });
});
