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
import { scratchDir } from '../../paths';
import { writeTinyLlama } from '../../demo/tiny-model';
import { writeTinyTokenizer } from '../../demo/tiny-tokenizer';
import { defineCommand, println, type CliIO } from '../command';
import { cliInvocation, INSTALL_HINT } from '../invocation';

/** What a new user can try after the demo, `cmd` being how this CLI was started (cliInvocation). */
function nextLines(cmd: string): string[] {
  const lines = [
    '',
    'next, on your own model folder (a Hugging Face checkpoint with config.json):',
    `  ${cmd} export --config <model dir> --out <export dir>   then prepare, compile, run as above`,
    `  ${cmd} inspect <model dir | file.safetensors | file.onnx>   what a checkpoint or graph holds (headers only)`,
    `  ${cmd} check <export dir>/weight_spec.json               the editor's diagnostics, on the command line`,
    `  ${cmd} run <export dir> --chat "message"                 text in, text out with the model's tokenizer.json and chat template`,
    '  VS Code: install the extension (npm run package → weight-spec.vsix) for hover, quick fixes and code lenses on weight_spec.json',
  ];
  if (cmd !== 'weight-spec') lines.push(`  ${INSTALL_HINT}`);
  return lines;
}

/** The CLI's entry point, which the demo runs each step through. */
export type Main = (argv: readonly string[], io: CliIO) => Promise<number>;

/**
 * The `demo` command over `main`, which runs its steps. `main` is handed in by main.ts (which
 * lists this command) rather than imported, so the two modules do not import each other.
 */
export const demoCommandWith = (main: Main) =>
  defineCommand({
    name: 'demo',
    summary: 'run the whole pipeline on a tiny model made on the spot',
    synopsis: ['demo [--out <dir> | --keep] [--input-ids 1,5,9] [--prompt "text"] [--max-new-tokens N]'],
    details: [
      'The model is random (seeded), so the generated tokens are arbitrary; the point is the pipeline.',
      'It ships a tiny word-level tokenizer (tokenizer.json), so the last step is run --prompt: text in, text out.',
      'Without --out the files go to a new temp directory that is removed at the end unless --keep is given.',
    ],
    flags: {
      out: {
        type: 'string',
        placeholder: '<dir>',
        description: 'where to put the demo files (kept; default: a temp directory removed at the end)',
      },
      keep: { type: 'boolean', description: 'keep the temp directory and print how to remove it' },
      'input-ids': { type: 'string', placeholder: '<ids>', description: 'prompt token ids (default 1,17,42,7)' },
      prompt: {
        type: 'string',
        placeholder: '<text>',
        description: 'the last step\'s prompt as text, in the tiny tokenizer\'s words (default "the cat sat on the mat")',
      },
      'max-new-tokens': { type: 'int', placeholder: '<N>', description: 'tokens to generate (default 8)' },
    },
    positionals: { min: 0, max: 0, names: [] },
    async run(args, io) {
      // Only a directory this run made itself (mkdtemp) is ever removed; --out is the user's.
      // Without --keep it is a scratch folder, which an interrupt (Ctrl-C) removes too.
      const own = args.flags.out === undefined;
      const keep = !own || args.flags.keep;
      const scratch = own && !keep ? scratchDir('weight-spec-demo-') : undefined;
      const root = scratch?.dir ?? (own ? mkdtempSync(path.join(os.tmpdir(), 'weight-spec-demo-')) : path.resolve(io.cwd, args.flags.out!));
      const model = path.join(root, 'tiny-llama');
      const exported = path.join(root, 'tiny-llama-export');
      println(io.stdout, `demo: writing a tiny Llama checkpoint (2 layers, hidden 32, vocab 128, bf16) to ${model}`);
      println(io.stdout, 'demo: its weights are random (seeded), so the generated tokens are arbitrary — the point is the pipeline');
      await writeTinyLlama(model);
      // a word-level tokenizer over the same 128 ids, so the last step is text in, text out
      writeTinyTokenizer(model);
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
        [
          'run',
          exported,
          '--prompt',
          args.flags.prompt ?? 'the cat sat on the mat',
          '--max-new-tokens',
          String(args.flags['max-new-tokens'] ?? 8),
        ],
      ];
      // The form that runs where the user is (`npm ci` puts no `weight-spec` on PATH).
      const cmd = cliInvocation(io.cwd);
      for (const step of steps) {
        // quoted as a shell needs it, so a printed step can be pasted (the prompt has spaces)
        println(io.stdout, `\n$ ${cmd} ${step.map((a) => (/[\s"'$]/.test(a) ? JSON.stringify(a) : a)).join(' ')}`);
        const code = await main(step, io);
        if (code !== 0) throw new PipelineError(`demo: step "weight-spec ${step[0]}" failed (exit ${code}); files are in ${root}`);
      }
      println(io.stdout, '');
      if (keep) {
        println(io.stdout, `demo: done — every file is in ${root}`);
        if (own) println(io.stdout, `demo: remove them with: rm -rf ${root}`);
      } else {
        await scratch?.remove();
        println(io.stdout, `demo: done — removed its temp files (${root}); --keep keeps them, --out <dir> puts them where you say`);
      }
      for (const line of nextLines(cmd)) println(io.stdout, line);
      return 0;
    },
  });
