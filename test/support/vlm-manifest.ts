/**
 * The vlm.json manifest of the qwen3_vl_moe fixture's shape (2 text layers of 64, token ids
 * 300–302), for tests of the VLM input readers (core/test/vlm/vlm-inputs, image-trust) that need
 * an export's manifest without exporting.
 */
import path from 'node:path';
import type { VlmManifest } from '../../core/src/export/vlm/export-vlm';

/** The manifest of a float32 qwen3_vl_moe export of `modelDir`, with vision patches of `patchSize`. */
export function qwen3VlManifest(modelDir: string, patchSize: number): VlmManifest {
  return {
    tool: 'weight-spec export',
    kind: 'vlm',
    model_type: 'qwen3_vl_moe',
    config: path.join(modelDir, 'config.json'),
    graphs: { vision: 'vision', language: 'language' },
    image_token_id: 300,
    video_token_id: 301,
    vision_start_token_id: 302,
    vision: { patch_size: patchSize, temporal_patch_size: 2, spatial_merge_size: 2, in_channels: 3, num_feature_layers: 2 },
    text: { hidden_size: 64, num_hidden_layers: 2 },
    dtype: 'float32',
  };
}
