/**
 * `weight-spec demo`: the README's first command — makes a tiny model itself and runs the
 * whole pipeline (export, prepare, compile, run, check) on it.
 *
 * Not implemented yet: the demo issue fills in `run`.
 */
import { PipelineError } from '../../errors';
import { defineCommand } from '../command';

export const demoCommand = defineCommand({
  name: 'demo',
  summary: 'run the whole pipeline on a tiny model made on the spot',
  synopsis: ['demo [--out <dir>]'],
  flags: {
    out: { type: 'string', placeholder: '<dir>', description: 'where to put the demo files (default: a temp directory)' },
  },
  positionals: { min: 0, max: 0, names: [] },
  async run() {
    throw new PipelineError('demo is not implemented yet');
  },
});
