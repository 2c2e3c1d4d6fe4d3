/** Mixtral (transformers `models/mixtral/modeling_mixtral.py`): Mistral with a sparse MoE in every layer (`block_sparse_moe`). */
import { llamaLikeRow } from './llama';

/** The mixtral row of the family registry. */
export const mixtralFamily = llamaLikeRow(
  {
    modelType: 'mixtral',
    hfClass: 'MixtralForCausalLM',
    moe: 'softmax',
    test: { fixture: 'mixtral' },
  },
  {
    defaultEps: 1e-5,
    slidingWindow: 'read',
    moe: {
      expertsField: 'num_local_experts',
      block: 'block_sparse_moe',
      intermediate: 'intermediate_size',
      layers: 'all',
      normTopK: 'always',
    },
  },
);
