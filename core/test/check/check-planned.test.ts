/**
 * Issue 15.2: a misspelled key is reported before prepare. Between export and prepare the
 * spec's prepared shards do not exist; the checker plans prepare from the source
 * checkpoint's headers (planned.ts) and checks each key against that plan, with the same
 * did-you-mean as after prepare. Also: a misspelled field name suggests the field.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { checkSpec } from '../../src/check';
import { parseSpecText } from '../../src/spec/parse';
import { describeFixtures, fixturesDir, REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-planned-');

function exportLlama(): string {
  const out = path.join(tmp(), 'e');
  const r = spawnSync(
    process.execPath,
    [path.join(REPO_ROOT, 'dist', 'cli.js'), 'export', '--config', path.join(fixturesDir(), 'llama'), '--out', out],
    {
      encoding: 'utf8',
      env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off' },
    },
  );
  expect(r.status, r.stderr).toBe(0);
  return out;
}

/** The spec text with one input's `location.key` (not its name) changed. */
function misspell(text: string, good: string, bad: string): string {
  const keyText = `"key": "${good}"`;
  expect(text).toContain(keyText);
  return text.replace(keyText, `"key": "${bad}"`);
}

describeFixtures("keys checked against prepare's plan before prepare", () => {
  const good = 'model.layers.0.mlp.gate_proj.weight';
  const bad = 'model.layers.0.mlp.gate_prj.weight';

  it('a misspelled key is key-missing with the suggestion, and says it was checked against the plan', async () => {
    const out = exportLlama();
    const specFile = path.join(out, 'weight_spec.json');
    const clean = await checkSpec(specFile, readFileSync(specFile, 'utf8'));
    // Before prepare: only the "not prepared yet" warnings, no error.
    expect(clean.filter((p) => p.severity === 'error')).toEqual([]);
    expect(clean.some((p) => p.code === 'not-prepared' && p.severity === 'warning')).toBe(true);

    const problems = await checkSpec(specFile, misspell(readFileSync(specFile, 'utf8'), good, bad));
    const errors = problems.filter((p) => p.severity === 'error');
    expect(errors.map((p) => p.code)).toEqual(['key-missing']);
    expect(errors[0]!.message).toContain(`did you mean "${good}"`);
    expect(errors[0]!.message).toContain('not prepared yet, checked against the plan of `weight-spec prepare --checkpoint');
    expect(errors[0]!.path).toEqual(expect.arrayContaining(['location', 'key']));

    // The CLI says the same and fails.
    writeFileSync(specFile, misspell(readFileSync(specFile, 'utf8'), good, bad));
    const r = spawnSync(process.execPath, [path.join(REPO_ROOT, 'dist', 'cli.js'), 'check', specFile], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/error \[key-missing\] key "model\.layers\.0\.mlp\.gate_prj\.weight".*did you mean.*checked against the plan/);
    // The missing prepared checkpoint is one line, whatever its shard count (issue 36), in the editor's words.
    expect(r.stdout.match(/\[not-prepared\]/g)).toHaveLength(1);
    expect(r.stdout).toMatch(/warning \[not-prepared\] not prepared yet: .*; run Prepare \(weight-spec prepare\) to create it: \S+\//);
    // The export directory stands for its weight_spec.json, as compile and run take it.
    const d = spawnSync(process.execPath, [path.join(REPO_ROOT, 'dist', 'cli.js'), 'check', path.dirname(specFile)], { encoding: 'utf8' });
    expect(d.status).toBe(1);
    expect(d.stdout).toBe(r.stdout);
    expect(d.stdout).toContain(`${specFile}:`);
  });

  it("without export-report.json the source is found from model_id (prepare's default output beside its source)", async () => {
    const out = exportLlama();
    rmSync(path.join(out, 'export-report.json'));
    const specFile = path.join(out, 'weight_spec.json');
    const problems = await checkSpec(specFile, misspell(readFileSync(specFile, 'utf8'), good, bad));
    const errors = problems.filter((p) => p.severity === 'error');
    expect(errors.map((p) => p.code)).toEqual(['key-missing']);
    expect(errors[0]!.message).toContain(path.join(fixturesDir(), 'llama'));
  });

  it('a key that exists elsewhere in the plan is accepted (no false key-missing before prepare)', async () => {
    const out = exportLlama();
    const specFile = path.join(out, 'weight_spec.json');
    const text = readFileSync(specFile, 'utf8');
    // Point an input at a key that exists in the plan: no error; at one that does not: error.
    const moved = misspell(text, good, 'model.layers.0.mlp.up_proj.weight');
    expect((await checkSpec(specFile, moved)).filter((p) => p.code === 'key-missing')).toEqual([]);
  });
});

it('a misspelled field name suggests the field it resembles', () => {
  const text = JSON.stringify({
    files: [{ format: 'safetensors', path: 'a.safetensors' }],
    inputs: [{ location: { file: 0, kee: 'w' }, name: 'w' }],
    version: 5,
  });
  const parsed = parseSpecText(text, 'x.weight_spec.json');
  const msgs = parsed.problems.map((p) => p.message);
  expect(msgs).toContain('inputs[0].location: missing required field "key"; "kee" looks like a misspelling of it');
});
