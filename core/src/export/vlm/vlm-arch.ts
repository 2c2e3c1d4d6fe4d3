/**
 * A VLM config.json → both architectures, by model_type: Qwen3-VL(-MoE) in config.ts, Qwen2.5-VL
 * in config-qwen2-5.ts (Gemma 3 is built by export-vlm.ts from vision-gemma3.ts and
 * language-gemma3.ts). The dispatch sits here so that config-qwen2-5.ts, which reuses config.ts's
 * text architecture, and config.ts do not import each other.
 */
import { qwen3VlArch, vlmModelTypeOf, type VlmArch } from './config';
import { qwen25VlArch } from './config-qwen2-5';

/** Parses a Qwen VLM config.json into its vision and text architectures. */
export function vlmArchFromConfig(raw: unknown, file: string): VlmArch {
  const modelType = vlmModelTypeOf(raw, file);
  if (modelType === 'qwen2_5_vl') return qwen25VlArch(raw as Record<string, unknown>, file);
  if (modelType === 'llava' || modelType === 'llava_next')
    throw new Error('internal: llava is built by vlm/export-vlm.ts (config-llava.ts, vision-llava.ts, language-llava.ts)');
  if (modelType === 'gemma3') throw new Error('internal: gemma3 is built by vlm/export-vlm.ts (vision-gemma3.ts, language-gemma3.ts)');
  return qwen3VlArch(raw, file, modelType);
}
