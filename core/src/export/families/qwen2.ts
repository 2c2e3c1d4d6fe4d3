/** Qwen2 (transformers `models/qwen2/modeling_qwen2.py`): q/k/v with bias, o without; `use_sliding_window` refused. */
import { llamaLikeRow } from './llama';

/** The qwen2 row of the family registry. */
export const qwen2Family = llamaLikeRow(
  {
    modelType: 'qwen2',
    hfClass: 'Qwen2ForCausalLM',
    moe: 'none',
    test: { fixture: 'qwen2' },
  },
  { defaultEps: 1e-6, slidingWindow: 'refuse-flag', qkvBiasOnly: true },
);
