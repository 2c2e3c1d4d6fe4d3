import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CLI_ERROR_PATTERN,
  compileArgs,
  exportArgs,
  parseCliError,
  parseExpertParallel,
  parseProgressLine,
  parseTokenIds,
  prepareArgs,
  prepareDtypeChoices,
  runArgs,
  taskArgs,
} from '../../core/src/editor/cli-args';
import { tempDirs } from '../../test/support/temp';

const tmpDir = tempDirs('ws-');

const repo = path.resolve(__dirname, '..', '..');

describe('CLI argument lists', () => {
  it('export from a model folder or from an ONNX + checkpoint', () => {
    expect(exportArgs({ config: '/m', out: '/o', dtype: 'float16', ctxLen: 64 })).toEqual([
      'export',
      '--config',
      '/m',
      '--out',
      '/o',
      '--dtype',
      'float16',
      '--ctx-len',
      '64',
    ]);
    expect(exportArgs({ onnx: '/m/a.onnx', checkpoint: '/m', out: '/o', dtype: 'float16' })).toEqual([
      'export',
      '--onnx',
      '/m/a.onnx',
      '--checkpoint',
      '/m',
      '--out',
      '/o',
    ]);
    expect(() => exportArgs({ out: '/o' })).toThrow(/model folder/);
  });

  it('prepare with RAM budget and expert-parallel packing', () => {
    expect(prepareArgs({ checkpoint: '/c', dtype: 'bfloat16' })).toEqual(['prepare', '--checkpoint', '/c', '--dtype', 'bfloat16']);
    expect(
      prepareArgs({ checkpoint: '/c', dtype: 'float32', out: '/p', maxRamGb: 2.5, expertParallel: { stages: 2, experts: 4 } }),
    ).toEqual([
      'prepare',
      '--checkpoint',
      '/c',
      '--dtype',
      'float32',
      '--out',
      '/p',
      '--max-ram-gb',
      '2.5',
      '--moe-flavour',
      'expert_parallel',
      '--pipeline-stages',
      '2',
      '--parallel-experts',
      '4',
    ]);
    expect(prepareArgs({ checkpoint: '/c', dtype: 'float32', maxRamGb: 0 })).not.toContain('--max-ram-gb');
    // the editor's Prepare never passes --allow-overflow: the user sees prepare's refusal (issue #28)
    expect(prepareArgs({ checkpoint: '/c', dtype: 'float16', out: '/p', maxRamGb: 1 })).not.toContain('--allow-overflow');
    // N omitted: the CLI derives N = E / P (QEfficient modeling_auto.py)
    expect(prepareArgs({ checkpoint: '/c', dtype: 'float32', expertParallel: { stages: 4 } })).toEqual([
      'prepare',
      '--checkpoint',
      '/c',
      '--dtype',
      'float32',
      '--moe-flavour',
      'expert_parallel',
      '--pipeline-stages',
      '4',
    ]);
  });

  it('compile, recompile and run', () => {
    expect(compileArgs({ exportDir: '/e', backend: 'qaic', prepared: '/p', force: true })).toEqual([
      'compile',
      '/e',
      '--backend',
      'qaic',
      '--prepared',
      '/p',
      '--force',
    ]);
    expect(compileArgs({ exportDir: '/e' })).toEqual(['compile', '/e']);
    expect(runArgs({ target: '/e', inputIds: [3, 17, 5], maxNewTokens: 4 })).toEqual([
      'run',
      '/e',
      '--input-ids',
      '3,17,5',
      '--max-new-tokens',
      '4',
    ]);
    expect(runArgs({ target: '/v', inputIds: [1], images: ['/a.png', '/b.jpg'] })).toEqual([
      'run',
      '/v',
      '--input-ids',
      '1',
      '--image',
      '/a.png',
      '--image',
      '/b.jpg',
    ]);
  });

  it('task definitions map to the same argument lists, naming a missing field', () => {
    expect(taskArgs({ type: 'weight-spec', command: 'prepare', checkpoint: 'llama' }, { dtype: 'float16', maxRamGb: 4 })).toEqual(
      prepareArgs({ checkpoint: 'llama', dtype: 'float16', maxRamGb: 4 }),
    );
    expect(taskArgs({ type: 'weight-spec', command: 'export', config: 'm', out: 'o' }, { dtype: 'bfloat16' })).toEqual([
      'export',
      '--config',
      'm',
      '--out',
      'o',
    ]);
    expect(taskArgs({ type: 'weight-spec', command: 'compile', exportDir: 'e' }, { backend: 'qaic' })).toEqual([
      'compile',
      'e',
      '--backend',
      'qaic',
    ]);
    expect(() => taskArgs({ type: 'weight-spec', command: 'compile' })).toThrow('weight-spec task "compile" needs "exportDir"');
    expect(() => taskArgs({ type: 'weight-spec', command: 'export', onnx: 'a.onnx', out: 'o' })).toThrow(/needs "checkpoint"/);
    expect(() => taskArgs({ type: 'weight-spec', command: 'bogus' as 'export' })).toThrow(/unknown command "bogus"/);
  });

  it('parses token ids and P/E', () => {
    expect(parseTokenIds(' 1, 15,7 ')).toEqual([1, 15, 7]);
    expect(parseTokenIds('1 2 3')).toEqual([1, 2, 3]);
    expect(parseTokenIds('1,-2')).toBeUndefined();
    expect(parseTokenIds('1.5')).toBeUndefined();
    expect(parseTokenIds('')).toBeUndefined();
    expect(parseExpertParallel('2/4')).toEqual({ stages: 2, experts: 4 });
    expect(parseExpertParallel('0/4')).toBeUndefined();
    expect(parseExpertParallel('4')).toEqual({ stages: 4 });
    expect(parseExpertParallel('two')).toBeUndefined();
  });

  it('reads percentages from plain progress lines', () => {
    expect(parseProgressLine('prepare: 42% (3/7) layer 2')).toEqual({ label: 'prepare', percent: 42, detail: '(3/7) layer 2' });
    expect(parseProgressLine('prepare: done, 100% (7/7) in 0.3s')).toBeUndefined();
    expect(parseProgressLine('weight-spec: /a: bad')).toBeUndefined();
  });
});

describe("Prepare's dtype picker (issue 50: a lens confirms the spec's dtype)", () => {
  it("puts the spec's dtype first, then the setting's default, and says which is which", () => {
    expect(prepareDtypeChoices('bfloat16', 'float32')).toEqual([
      { label: 'bfloat16', description: "the spec's dtype (its graph inputs)" },
      { label: 'float32', description: 'default (weightSpec.defaultDtype)' },
      { label: 'float16', description: '' },
    ]);
    expect(prepareDtypeChoices('float16', 'float16')).toEqual([
      { label: 'float16', description: "the spec's dtype (its graph inputs) · default (weightSpec.defaultDtype)" },
      { label: 'float32', description: '' },
      { label: 'bfloat16', description: '' },
    ]);
    // No spec (a checkpoint folder): the default first, as before.
    expect(prepareDtypeChoices(undefined, 'bfloat16').map((c) => c.label)).toEqual(['bfloat16', 'float32', 'float16']);
  });
});

describe('the problem matcher', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8'));
  const matcher = pkg.contributes.problemMatchers.find((m: { name: string }) => m.name === 'weight-spec');

  it('package.json uses the same pattern as the code', () => {
    expect(matcher.pattern.regexp).toBe(CLI_ERROR_PATTERN);
    expect(matcher.fileLocation).toBe('absolute');
    expect(matcher.pattern).toMatchObject({ file: 1, message: 2 });
  });

  it('splits a CLI error line into file and message', () => {
    expect(parseCliError('weight-spec: /w/x.safetensors: header length 99 exceeds the file size (at byte 0)')).toEqual({
      file: '/w/x.safetensors',
      message: 'header length 99 exceeds the file size (at byte 0)',
    });
    expect(parseCliError('weight-spec: unknown command "x"')).toBeUndefined();
  });

  it.runIf(fs.existsSync(path.join(repo, 'dist', 'cli.js')))('matches the error line the real CLI prints for a corrupt file', () => {
    const dir = tmpDir('ws-pm-');
    const bad = path.join(dir, 'broken.safetensors');
    fs.writeFileSync(bad, Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x7b]));
    const r = spawnSync(process.execPath, [path.join(repo, 'dist', 'cli.js'), 'inspect', bad], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    const line = r.stderr.trim().split('\n').pop()!;
    const m = parseCliError(line);
    expect(m?.file).toBe(bad);
    expect(m?.message.length).toBeGreaterThan(0);
  });
});
