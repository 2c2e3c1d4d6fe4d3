// The CLI's typed flag parser and progress helper (in-process; the spawned CLI is in cli.test.ts).
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors';
import { parseArgs } from '../../src/cli/args';
import type { CliIO } from '../../src/cli/command';
import { main } from '../../src/cli/main';
import { closestWord, typoDistance } from '../../src/foundation/closest-word';
import { formatBytes } from '../../src/display';
import { createProgress } from '../../src/cli/progress';
import { table } from '../../src/cli/table';

const defs = {
  json: { type: 'boolean', description: 'json' },
  dtype: { type: 'string', choices: ['float32', 'float16'], description: 'dtype' },
  'ctx-len': { type: 'int', description: 'ctx' },
  'max-ram-gb': { type: 'number', description: 'ram' },
  root: { type: 'string', multiple: true, description: 'roots' },
} as const;

describe('parseArgs', () => {
  it('reads every flag kind and positionals', () => {
    const a = parseArgs(
      ['x.json', '--json', '--dtype', 'float16', '--ctx-len=128', '--max-ram-gb', '1.5', '--root', 'a', '--root=b', '--', '--not-a-flag'],
      defs,
      't',
    );
    expect(a.positionals).toEqual(['x.json', '--not-a-flag']);
    expect(a.flags.json).toBe(true);
    expect(a.flags.dtype).toBe('float16');
    expect(a.flags['ctx-len']).toBe(128);
    expect(a.flags['max-ram-gb']).toBe(1.5);
    expect(a.flags.root).toEqual(['a', 'b']);
  });
  it('defaults: booleans false, multiples empty, others undefined', () => {
    const a = parseArgs([], defs, 't');
    expect(a.flags).toEqual({ json: false, root: [] });
    expect(a.flags.dtype).toBeUndefined();
  });
  it.each([
    [['--nope'], /unknown option --nope/],
    [['-x'], /unknown option -x/],
    [['--dtype'], /--dtype needs a value/],
    [['--dtype', '--json'], /--dtype needs a value/],
    [['--dtype', 'int4'], /must be one of float32, float16/],
    [['--ctx-len', '1.5'], /needs a decimal integer/],
    [['--max-ram-gb', 'lots'], /needs a number/],
    [['--dtype', 'float32', '--dtype', 'float16'], /given twice/],
    [['--json=yes'], /takes no value/],
    [['--js'], /did you mean --json/],
  ])('%j is a usage error', (argv, msg) => {
    expect(() => parseArgs(argv, defs, 't')).toThrow(UsageError);
    expect(() => parseArgs(argv, defs, 't')).toThrow(msg);
  });
  it('required flags', () => {
    const req = { out: { type: 'string', required: true, placeholder: '<dir>', description: 'o' } } as const;
    expect(() => parseArgs([], req, 'export')).toThrow('export: missing required option --out <dir>');
    expect(parseArgs(['--out', 'd'], req, 'export').flags.out).toBe('d');
  });
});

/** A fake stderr that records writes. */
function sink(isTTY: boolean) {
  const chunks: string[] = [];
  return {
    chunks,
    stream: { isTTY, columns: 80, write: (s: string) => (chunks.push(s), true) } as unknown as NodeJS.WritableStream & { isTTY: boolean },
  };
}

describe('createProgress', () => {
  it('prints plain periodic lines when not a TTY (no control characters)', () => {
    let t = 0;
    const s = sink(false);
    const p = createProgress('prepare', { total: 100, stream: s.stream, plainIntervalMs: 1000, now: () => t });
    p.update(10); // first update prints
    t = 500;
    p.update(20); // within the interval: nothing
    t = 1600;
    p.update(50, undefined, 'layer 3');
    t = 2000;
    p.done();
    expect(s.chunks).toEqual(['prepare: 10% (10/100)\n', 'prepare: 50% (50/100) layer 3\n', 'prepare: done, 50% (50/100) in 2.0s\n']);
  });
  it('redraws one line on a TTY and clears it at the end', () => {
    let t = 0;
    const s = sink(true);
    const p = createProgress('copy', { total: 2048, unit: 'bytes', stream: s.stream, now: () => t });
    p.update(1024);
    t = 200;
    p.log('note');
    t = 400;
    p.done('ok');
    const out = s.chunks.join('');
    expect(out.startsWith('\r\x1b[Kcopy [')).toBe(true);
    expect(out).toContain('50% (1.0 KiB/2.0 KiB)');
    expect(out).toContain('\r\x1b[Knote\n');
    expect(out.endsWith('\r\x1b[Kcopy: ok in 0.4s\n')).toBe(true);
  });
  it('formats byte sizes', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(230016)).toBe('224.6 KiB');
    expect(formatBytes(5 * 1024 ** 3)).toBe('5.0 GiB');
  });
});

describe('table', () => {
  it('pads columns, right-aligns numbers, leaves no trailing spaces', () => {
    expect(
      table(
        ['k', 'n', 'x'],
        [
          ['aaa', '1', ''],
          ['b', '22', 'z'],
        ],
        { right: [1] },
      ),
    ).toEqual(['k     n  x', 'aaa   1', 'b    22  z']);
  });
});

describe('did you mean (issue 15.5: real typos get a suggestion)', () => {
  // Each row was a bare "unknown option"/"unknown command" before: the old prefix test only
  // caught truncations of a flag.
  const exportDefs = {
    config: { type: 'string', description: 'c' },
    out: { type: 'string', description: 'o' },
    dtype: { type: 'string', description: 'd' },
    'ctx-len': { type: 'int', description: 'c' },
    'batch-size': { type: 'int', description: 'b' },
    'continuous-batching': { type: 'boolean', description: 'cb' },
  } as const;
  const runDefs = {
    'input-ids': { type: 'string', description: 'i' },
    'max-new-tokens': { type: 'int', description: 'n' },
    'dump-logits': { type: 'string', description: 'd' },
  } as const;
  it.each([
    ['--ctx_len', exportDefs, 'ctx-len'], // underscore for dash
    ['--dytpe', exportDefs, 'dtype'], // transposition
    ['--dtpye', exportDefs, 'dtype'],
    ['--otu', exportDefs, 'out'],
    ['--batch_size', exportDefs, 'batch-size'],
    ['--continous-batching', exportDefs, 'continuous-batching'], // dropped letter
    ['--max-new-token', runDefs, 'max-new-tokens'], // missing plural
    ['--input_ids', runDefs, 'input-ids'],
    ['--dump-logit', runDefs, 'dump-logits'],
    ['--inputids', runDefs, 'input-ids'],
  ] as const)('%s suggests --%s', (word, defs, want) => {
    expect(() => parseArgs([word, 'x'], defs, 't')).toThrow(`(did you mean --${want}?)`);
  });
  it('far-off words get no suggestion', () => {
    expect(() => parseArgs(['--zzz'], exportDefs, 't')).toThrow(/unknown option --zzz$/);
  });
  it.each([
    ['expor', 'export'],
    ['exprot', 'export'],
    ['prepar', 'prepare'],
    ['complie', 'compile'],
    ['inpsect', 'inspect'],
    ['chek', 'check'],
    ['rn', 'run'],
  ])('command %s suggests %s', async (word, want) => {
    const err: string[] = [];
    const io = { stdout: { write: () => true }, stderr: { write: (s: string) => (err.push(s), true) }, cwd: process.cwd(), env: {} };
    const code = await main([word], io as unknown as CliIO);
    expect(code).toBe(2);
    expect(err.join('')).toContain(`unknown command "${word}" (did you mean "${want}"?)`);
  });
  it('closestWord ignores case and separators and refuses distant words', () => {
    expect(closestWord('CTX_LEN', ['ctx-len', 'dtype'])).toBe('ctx-len');
    expect(closestWord('frobnicate', ['export', 'prepare', 'compile', 'run'])).toBeUndefined();
    expect(typoDistance('dytpe', 'dtype', 2)).toBe(1);
    expect(typoDistance('abc', 'xyz', 1)).toBe(2);
  });
});
