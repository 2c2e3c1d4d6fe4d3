/**
 * One severity per problem code, and a refused path's exit code said explicitly.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkSpec } from '../../src/check';
import { writeTinyLlama } from '../../src/demo/tiny-model';
import { UsageError } from '../../src/errors';
import { PathPolicyError } from '../../src/paths';
import { PROBLEM_SEVERITY, isProblemCode } from '../../src/problem-codes';
import { cliInProcess } from '../../../test/support/cli';
import { tempDirs } from '../../../test/support/temp';
import { twoFileCheckpoint, writeTensors } from '../support/check-helpers';

const tmp = tempDirs('ws-codes-');

describe('problem codes', () => {
  it('a prepared checkpoint that does not exist yet is a warning; one that is incomplete is another code, an error', async () => {
    const dir = tmp();
    const prepared = path.join(dir, 'm-prepared-float32-0123456789');
    const spec = path.join(dir, 'weight_spec.json');
    const files = [{ format: 'safetensors', path: `${path.basename(prepared)}/base-0000.safetensors` }];
    fs.writeFileSync(spec, JSON.stringify({ version: 5, files, inputs: [{ name: 'w', location: { file: 0, key: 'w' } }] }));
    const missing = await checkSpec(spec, fs.readFileSync(spec, 'utf8'), { onnx: false });
    expect(missing.map((p) => [p.code, p.severity])).toEqual([['not-prepared', 'warning']]);
    writeTensors(path.join(prepared, 'base-0000.safetensors'), [{ key: 'w', dtype: 'F32', shape: [2] }]);
    fs.writeFileSync(path.join(prepared, '.checkpoint_prepared.json'), '{}');
    const incomplete = await checkSpec(spec, fs.readFileSync(spec, 'utf8'), { onnx: false });
    expect(incomplete.map((p) => [p.code, p.severity])).toEqual([['prepared-incomplete', 'error']]);
  });

  it('every problem a check reports has its code’s severity', async () => {
    const dir = tmp();
    const { spec } = twoFileCheckpoint(dir);
    spec.inputs.push({ name: spec.inputs[0]!.name, location: { file: 0, key: 'nope' } });
    (spec.inputs[1] as Record<string, unknown>).dtype = 'float16';
    (spec.inputs[2] as Record<string, unknown>).dtype = 'complex7';
    const file = path.join(dir, 'weight_spec.json');
    fs.writeFileSync(file, JSON.stringify(spec));
    const problems = await checkSpec(file, fs.readFileSync(file, 'utf8'), { onnx: false });
    expect(new Set(problems.map((p) => p.code))).toEqual(
      new Set(['duplicate-name', 'key-missing', 'declared-dtype-mismatch', 'dtype-unknown']),
    );
    for (const p of problems) {
      expect(isProblemCode(p.code)).toBe(true);
      expect(p.severity).toBe(PROBLEM_SEVERITY[p.code]);
    }
  });
});

describe('PathPolicyError', () => {
  it('says its own name and exit code (1: the command line was fine, the path was not)', () => {
    const e = new PathPolicyError('overwrite-refused', '/x', 'exists');
    expect(e).toBeInstanceOf(UsageError);
    expect(e.name).toBe('PathPolicyError');
    expect(e.exitCode).toBe(1);
    expect(new UsageError('bad flag').exitCode).toBe(2);
  });

  it('the CLI exits 1 with one line and no usage text for a refused output path', async () => {
    const dir = tmp();
    await writeTinyLlama(path.join(dir, 'm'));
    fs.mkdirSync(path.join(dir, 'real'));
    fs.symlinkSync(path.join(dir, 'real'), path.join(dir, 'link'));
    const r = await cliInProcess(['prepare', '--checkpoint', path.join(dir, 'm'), '--dtype', 'float32', '--out', path.join(dir, 'link')]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^weight-spec: .*link: .*symlink/);
  });
});
