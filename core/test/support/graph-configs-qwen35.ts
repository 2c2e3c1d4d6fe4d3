/**
 * Qwen3.5-MoE test configurations: the registry row's code-made ones (families/qwen3-5-moe.ts).
 */
import { qwen35MoeFamily, qwen35MultimodalConfig } from '../../src/export/families/qwen3-5-moe';

/** Another configuration than the fixture's (see the row). */
export const QWEN35_OTHER = qwen35MoeFamily.test.configs!['qwen3_5_moe-other']! as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
/** The published multimodal layout of a text config. */
export const multimodalConfig = qwen35MultimodalConfig;
