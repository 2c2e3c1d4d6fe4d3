/**
 * `weight-spec prepare`: turn a checkpoint into the layout and dtype the graph expects
 * (dtype conversion, MoE stacking, MXFP4 dequant, expert-parallel packing).
 *
 * Not implemented yet: the prepare issue fills in `run` (flags below are the CLI contract).
 */
import { PipelineError } from '../../errors';
import { defineCommand } from '../command';

export const prepareCommand = defineCommand({
  name: 'prepare',
  summary: 'prepare a checkpoint (dtype, MoE layout) for a weight-free graph',
  synopsis: [
    'prepare --checkpoint <dir> --dtype float32|float16|bfloat16 [--out <dir>] [--max-ram-gb X] [--moe-flavour expert_parallel --pipeline-stages P --parallel-experts E]',
  ],
  flags: {
    checkpoint: { type: 'string', placeholder: '<dir>', description: 'source safetensors checkpoint', required: true },
    dtype: { type: 'string', placeholder: '<dtype>', choices: ['float32', 'float16', 'bfloat16'], description: 'target dtype', required: true },
    out: { type: 'string', placeholder: '<dir>', description: 'output directory (default <checkpoint>-qeff-prepared-<dtype> beside the source)' },
    'max-ram-gb': { type: 'number', placeholder: '<X>', description: 'RAM budget (default 80% of available)' },
    'moe-flavour': { type: 'string', placeholder: '<flavour>', choices: ['expert_parallel'], description: 'MoE prefill flavour' },
    'pipeline-stages': { type: 'int', placeholder: '<P>', description: 'pipeline stages (expert_parallel)' },
    'parallel-experts': { type: 'int', placeholder: '<E>', description: 'parallelized experts (expert_parallel)' },
  },
  positionals: { min: 0, max: 0, names: [] },
  async run() {
    throw new PipelineError('prepare is not implemented yet');
  },
});
