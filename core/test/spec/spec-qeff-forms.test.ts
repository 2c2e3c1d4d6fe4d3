/**
 * What QEfficient's reader accepts, this tool reads the same way (quic/efficient-transformers
 * `QEfficient/exporter/weight_free/weight_spec.py` `load_weight_spec`, 4a1232e3):
 *  - `version` absent → `WEIGHT_SPEC_VERSION` = 5;
 *  - `WeightSpecLocation.file: Union[int, str]` → a path string names the file;
 *  - inputs with `location: null` or no location are skipped ("old buffer-only entries") —
 *    here a warning (`input-skipped`) in `check` and in the editor, never an error.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkSpec } from '../../src/check';
import { parseSpecText, writeSpecText } from '../../src/spec';
import { REPO_ROOT } from '../../../test/support/fixtures';
import { tempDir, twoFileCheckpoint, type TwoFileSpec } from '../support/check-helpers';

let dir = '';
let good: TwoFileSpec;
beforeAll(() => {
  dir = tempDir('ws-qeff-forms-');
  good = twoFileCheckpoint(dir).spec;
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const edited = (edit: (s: any) => void): string => {
  const s = structuredClone(good) as any; // eslint-disable-line @typescript-eslint/no-explicit-any
  edit(s);
  return JSON.stringify(s, null, 2);
};

describe('spec forms QEfficient reads', () => {
  it('a spec without "version" is version 5, checks clean, and is written back as v5', async () => {
    const text = edited((s) => delete s.version);
    const parsed = parseSpecText(text, path.join(dir, 'weight_spec.json'));
    expect(parsed.problems).toEqual([]);
    expect(parsed.spec!.version).toBe(5);
    expect(JSON.parse(writeSpecText(parsed.spec!)).version).toBe(5);
    expect(await checkSpec(path.join(dir, 'weight_spec.json'), text)).toEqual([]);
  });

  it('location.file as a path string: a listed file resolves to its index, an unlisted one is added', async () => {
    const listed = edited((s) => (s.inputs[3].location.file = 'ckpt/b.safetensors'));
    const a = parseSpecText(listed, path.join(dir, 'weight_spec.json'));
    expect(a.problems).toEqual([]);
    expect(a.spec!.inputs[3]!.location).toEqual({ file: 1, key: 'model.norm.weight' });
    expect(a.spec!.files).toHaveLength(2);
    expect(await checkSpec(path.join(dir, 'weight_spec.json'), listed)).toEqual([]);

    // a file the list does not name (QEfficient opens the path as given)
    const unlisted = edited((s) => {
      s.files = [s.files[0]];
      s.inputs[3].location.file = 'ckpt/b.safetensors';
      s.inputs[4].location.file = 'ckpt/b.safetensors';
    });
    const b = parseSpecText(unlisted, path.join(dir, 'weight_spec.json'));
    expect(b.spec!.files.map((f) => f.path)).toEqual(['ckpt/a.safetensors', 'ckpt/b.safetensors']);
    expect(b.spec!.inputs[4]!.location.file).toBe(1);
    expect(await checkSpec(path.join(dir, 'weight_spec.json'), unlisted)).toEqual([]);

    // a wrong key in a path-named file is reported on that input's key
    const wrong = edited((s) => {
      s.inputs[3].location.file = 'ckpt/b.safetensors';
      s.inputs[3].location.key = 'model.nrom.weight';
    });
    const problems = await checkSpec(path.join(dir, 'weight_spec.json'), wrong);
    expect(problems.map((p) => p.code)).toEqual(['key-missing']);
    expect(problems[0]!.path).toEqual(['inputs', 3, 'location', 'key']);
  });

  it('inputs with location null or none are skipped with a warning (check and the CLI exit 0)', async () => {
    const text = edited((s) => {
      s.inputs[1].location = null;
      delete s.inputs[2].location;
    });
    const parsed = parseSpecText(text, path.join(dir, 'weight_spec.json'));
    expect(parsed.spec!.inputs.map((i) => i.name)).toEqual(['model.embed_tokens.weight', 'model.norm.weight', 'lm_head.weight']);
    const problems = await checkSpec(path.join(dir, 'weight_spec.json'), text);
    expect(problems.map((p) => [p.code, p.severity, p.path])).toEqual([
      ['input-skipped', 'warning', ['inputs', 1]],
      ['input-skipped', 'warning', ['inputs', 2]],
    ]);
    expect(text.slice(problems[0]!.range!.start, problems[0]!.range!.end)).toBe('null');
    const file = path.join(dir, 'skipped.weight_spec.json');
    fs.writeFileSync(file, text);
    const r = spawnSync(process.execPath, [path.join(REPO_ROOT, 'dist', 'cli.js'), 'check', file, '--no-onnx'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/warning \[input-skipped\] inputs\[1\]: no location; skipped/);
    expect(r.stdout).toMatch(/0 errors, 2 warnings/);
  });
});
