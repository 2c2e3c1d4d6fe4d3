/**
 * `weight-spec demo`: the README's first command — makes a tiny Llama checkpoint itself
 * (real HF config and key names, seeded bf16 weights) and runs the whole pipeline on it:
 * export from config.json → prepare float32 → compile (ONNX Runtime) → check → run.
 * Each step is the real CLI command, so the demo shows exactly what a user would type.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PipelineError } from '../../errors';
import { writeTinyLlama } from '../../demo/tiny-model';
import { defineCommand, println, type CliIO } from '../command';

type Main = (argv: readonly string[], io: CliIO) => Promise<number>;

export const demoCommand = defineCommand({
  name: 'demo',
  summary: 'run the whole pipeline on a tiny model made on the spot',
  synopsis: ['demo [--out <dir>] [--input-ids 1,5,9] [--max-new-tokens N]'],
  flags: {
    out: { type: 'string', placeholder: '<dir>', description: 'where to put the demo files (default: a new temp directory)' },
    'input-ids': { type: 'string', placeholder: '<ids>', description: 'prompt token ids (default 1,17,42,7)' },
    'max-new-tokens': { type: 'int', placeholder: '<N>', description: 'tokens to generate (default 8)' },
  },
  positionals: { min: 0, max: 0, names: [] },
  async run(args, io) {
    // Imported here: main.ts imports this file, so a top-level import would be circular.
    const { main } = (await import('../main')) as { main: Main };
    const root = path.resolve(io.cwd, args.flags.out ?? mkdtempSync(path.join(os.tmpdir(), 'weight-spec-demo-')));
    const model = path.join(root, 'tiny-llama');
    const exported = path.join(root, 'tiny-llama-export');
    println(io.stdout, `demo: writing a tiny Llama checkpoint (2 layers, hidden 32, vocab 128, bf16) to ${model}`);
    await writeTinyLlama(model);
    const steps: string[][] = [
      ['export', '--config', model, '--out', exported, '--ctx-len', '64'],
      ['prepare', '--checkpoint', model, '--dtype', 'float32'],
      ['compile', exported],
      ['check', path.join(exported, 'weight_spec.json')],
      [
        'run',
        exported,
        '--input-ids',
        args.flags['input-ids'] ?? '1,17,42,7',
        '--max-new-tokens',
        String(args.flags['max-new-tokens'] ?? 8),
      ],
    ];
    for (const step of steps) {
      println(io.stdout, `\n$ weight-spec ${step.join(' ')}`);
      const code = await main(step, io);
      if (code !== 0) throw new PipelineError(`demo: step "weight-spec ${step[0]}" failed (exit ${code}); files are in ${root}`);
    }
    println(io.stdout, `\ndemo: done — every file is in ${root}`);
    return 0;
  },
});
