/**
 * ORT backend end to end on graphs made from the fixtures' legacy.onnx (compile-support.ts):
 * compile → run against reference.json, zero-copy (artifact size, external-data locations
 * inside the model's directory, offsets into the safetensors data), incremental recompiles,
 * and the dtype/shape errors.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { compile } from '../../src/compile';
import { parseWireModel, scanFields } from '../../src/formats/onnx/wire-model';
import { openRunner } from '../../src/run';
import { describeFixtures, fixturesDir, LEGACY_FAMILIES } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { makeLegacyExport, makeSyntheticExport, maxAbsDiff, type Reference } from '../support/compile-support';

const tmp = tempDirs('ws-compile-');

const legacy = (fam: string) => path.join(fixturesDir(), fam, 'legacy.onnx');
const reference = (fam: string) => JSON.parse(fs.readFileSync(path.join(fixturesDir(), fam, 'reference.json'), 'utf8')) as Reference;

/** `n` greedy tokens from the compiled export, prompted with the fixture's input_ids. */
async function greedy(exportDir: string, fam: string, n: number): Promise<number[]> {
  const runner = await openRunner(exportDir);
  try {
    return await runner.generate(reference(fam).input_ids, n);
  } finally {
    await runner.close();
  }
}

/** External-data entries of every initializer of a bound model. */
function externalEntries(model: string): { name: string; location: string; offset: number; length: number }[] {
  const bytes = fs.readFileSync(model);
  const m = parseWireModel(bytes, model);
  const out: { name: string; location: string; offset: number; length: number }[] = [];
  for (const g of m.graphFields) {
    if (g.field !== 5) continue;
    const e: Record<string, string> = {};
    let name = '';
    for (const f of scanFields(bytes, g.vStart, g.vEnd, model)) {
      if (f.field === 8) name = Buffer.from(bytes.subarray(f.vStart, f.vEnd)).toString();
      if (f.field === 9) throw new Error(`${name}: bound model holds raw weight bytes`);
      if (f.field !== 13) continue;
      const kv = scanFields(bytes, f.vStart, f.vEnd, model).map((x) => Buffer.from(bytes.subarray(x.vStart, x.vEnd)).toString());
      e[kv[0]!] = kv[1]!;
    }
    out.push({ name, location: e.location!, offset: Number(e.offset), length: Number(e.length) });
  }
  return out;
}

describeFixtures('ort backend on legacy-derived weight-free graphs', () => {
  for (const fam of LEGACY_FAMILIES) {
    it(`${fam}: compile → logits equal reference.json (≤ 1e-4) and greedy decode reproduces generated_ids`, async () => {
      const made = makeLegacyExport(legacy(fam), tmp());
      const res = await compile(made.exportDir, { backend: 'ort' });
      expect(res.upToDate).toBe(false);
      const ref = reference(fam);
      const runner = await openRunner(made.exportDir);
      try {
        expect(runner.kind).toBe('full');
        const ids = [...ref.input_ids, ...ref.generated_ids.slice(0, -1)];
        const logits = await runner.logits(ids);
        expect(logits).toHaveLength(ref.logits.length);
        expect(maxAbsDiff(logits, ref.logits)).toBeLessThanOrEqual(1e-4);
        expect(await runner.generate(ref.input_ids, ref.generated_ids.length)).toEqual(ref.generated_ids);
      } finally {
        await runner.close();
      }
    });
  }

  it('binds without copying: artifact = graph + a few bytes per weight, locations inside the model directory, offsets = the tensors in the files', async () => {
    const made = makeLegacyExport(legacy('llama'), tmp());
    const { record } = await compile(made.exportDir, { backend: 'ort' });
    const model = record.artifacts.model!;
    const size = fs.statSync(model).size;
    // This helper's export keeps torch's names (its graph alone is 12 % of the tiny weights);
    // the bound model is slimmed, so it is at most the graph plus a few bytes per weight. The
    // CLI's own export is held to ≤ 5 % of the weights on every fixture (compile-cli.test.ts).
    expect(size).toBeLessThanOrEqual(fs.statSync(path.join(made.exportDir, 'model.onnx')).size + 200 * made.inits.length);
    expect(record.stats!.weightBytes).toBe(made.weightBytes);
    const modelDir = path.dirname(model);
    expect(fs.realpathSync(modelDir)).toBe(fs.realpathSync(made.preparedDir));
    const entries = externalEntries(model);
    expect(entries).toHaveLength(made.inits.length);
    for (const e of entries) {
      expect(path.isAbsolute(e.location)).toBe(false);
      expect(e.location.split('/')).not.toContain('..');
      const target = path.resolve(modelDir, e.location);
      expect(fs.lstatSync(target).isSymbolicLink()).toBe(false);
      expect(path.relative(fs.realpathSync(modelDir), fs.realpathSync(target)).startsWith('..')).toBe(false);
      // The bytes at offset/length in the shard are exactly the legacy initializer's bytes.
      const init = made.inits.find((t) => t.name === e.name)!;
      const fd = fs.openSync(target, 'r');
      const buf = Buffer.alloc(e.length);
      fs.readSync(fd, buf, 0, e.length, e.offset);
      fs.closeSync(fd);
      expect(Buffer.compare(buf, Buffer.from(init.raw))).toBe(0);
    }
  });

  it('is incremental: unchanged → up to date; touching the spec is not a change, editing it or a new shard recompiles', async () => {
    const made = makeLegacyExport(legacy('qwen2'), tmp());
    const first = await compile(made.exportDir, { backend: 'ort' });
    const again = await compile(made.exportDir, { backend: 'ort' });
    expect(again.upToDate).toBe(true);
    expect(again.record.fingerprint).toBe(first.record.fingerprint);

    const later = new Date(Date.now() + 5000);
    fs.utimesSync(made.specPath, later, later);
    expect((await compile(made.exportDir, { backend: 'ort' })).upToDate).toBe(true);
    const spec = JSON.parse(fs.readFileSync(made.specPath, 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(made.specPath, JSON.stringify({ ...spec, model_name: 'edited' }, null, 2));
    const touched = await compile(made.exportDir, { backend: 'ort' });
    expect(touched.upToDate).toBe(false);
    expect(touched.changed).toEqual(['spec']);
    expect(fs.existsSync(first.record.artifacts.model!)).toBe(false); // the old artifact is removed
    expect(fs.existsSync(touched.record.artifacts.model!)).toBe(true);

    const shard = path.join(made.preparedDir, 'base-0001.safetensors');
    const b = fs.readFileSync(shard);
    fs.rmSync(shard);
    fs.writeFileSync(shard, b);
    const reprepared = await compile(made.exportDir, { backend: 'ort' });
    expect(reprepared.changed).toEqual(['prepared']);
    expect((await compile(made.exportDir, { backend: 'ort' })).upToDate).toBe(true);
  });

  it('refuses a prepared dtype that differs from the graph input, naming the prepare --dtype to run', async () => {
    const made = makeLegacyExport(legacy('llama'), tmp(), 'BF16');
    await expect(compile(made.exportDir, { backend: 'ort' })).rejects.toThrow(
      /tensor "w\.model\.embed_tokens\.weight" is BF16 but graph input "model\.embed_tokens\.weight" is F32; run `weight-spec prepare --checkpoint .* --dtype float32`/,
    );
    expect(fs.existsSync(path.join(made.exportDir, 'compile.json'))).toBe(false);
  });

  it('refuses a shape mismatch and an input the graph does not have', async () => {
    const made = makeLegacyExport(legacy('llama'), tmp());
    const spec = JSON.parse(fs.readFileSync(made.specPath, 'utf8'));
    const [a, b] = [spec.inputs[0], spec.inputs.find((i: { name: string }) => i.name.startsWith('onnx::MatMul'))];
    [a.location, b.location] = [b.location, a.location];
    fs.writeFileSync(made.specPath, JSON.stringify(spec));
    await expect(compile(made.exportDir, { backend: 'ort' })).rejects.toThrow(/has shape \[.*\] but graph input ".*" is \[.*\]/);
    [a.location, b.location] = [b.location, a.location];
    spec.inputs.push({ name: 'not.in.graph', location: { file: 0, key: a.location.key } });
    fs.writeFileSync(made.specPath, JSON.stringify(spec));
    await expect(compile(made.exportDir, { backend: 'ort' })).rejects.toThrow(/input "not\.in\.graph" is not an input of model\.onnx/);
  });

  it('a read-only prepared directory is left untouched: shards are hard-linked beside the model', async () => {
    const made = makeLegacyExport(legacy('qwen2'), tmp());
    fs.chmodSync(made.preparedDir, 0o555);
    try {
      const before = fs.readdirSync(made.preparedDir).sort();
      const { record } = await compile(made.exportDir, { backend: 'ort' });
      expect(fs.readdirSync(made.preparedDir).sort()).toEqual(before);
      expect(path.dirname(record.artifacts.model!)).toBe(path.join(made.exportDir, 'compiled'));
      expect(await greedy(made.exportDir, 'qwen2', 2)).toEqual(reference('qwen2').generated_ids.slice(0, 2));
    } finally {
      fs.chmodSync(made.preparedDir, 0o755);
    }
  });

  it('--prepared binds another copy; the hard-link layout runs too', async () => {
    const made = makeLegacyExport(legacy('gpt2'), tmp());
    const copy = path.join(made.root, 'copy');
    fs.cpSync(made.preparedDir, copy, { recursive: true });
    const res = await compile(made.exportDir, { backend: 'ort', prepared: copy, links: true });
    const model = res.record.artifacts.model!;
    expect(path.dirname(model)).toBe(path.join(made.exportDir, 'compiled'));
    for (const e of externalEntries(model)) {
      const st = fs.lstatSync(path.join(path.dirname(model), e.location));
      expect(st.isSymbolicLink()).toBe(false);
      expect(st.nlink).toBeGreaterThanOrEqual(2);
      expect(st.ino).toBe(fs.statSync(path.join(copy, e.location.replace(/^.*__/, ''))).ino);
    }
    expect(await greedy(made.exportDir, 'gpt2', 3)).toEqual(reference('gpt2').generated_ids.slice(0, 3));
  });
});

describe('ort backend on a synthetic graph', () => {
  it('artifact ≤ 5 % of the weights, and the bound weights compute what they should', async () => {
    const made = makeSyntheticExport(tmp());
    const { record } = await compile(made.exportDir, { backend: 'ort' });
    expect(made.weightBytes).toBeGreaterThan(3_000_000);
    expect(fs.statSync(record.artifacts.model!).size).toBeLessThanOrEqual(0.05 * made.weightBytes);
    const runner = await openRunner(record.artifacts.model!);
    try {
      const ids = [0, 1999, 7];
      expect(maxAbsDiff(await runner.logits(ids), made.expected(ids))).toBeLessThan(1e-4);
      // Ids are checked against the rows of the table input_ids indexes (2000 here), not the
      // output's last dimension (256): row 1999 is valid, 2000 is refused before ORT runs.
      await expect(runner.logits([0, 2000])).rejects.toThrow(
        /token id 2000 \(position 1\) is outside the vocabulary .*0…1999 \(2000 tokens\)/,
      );
    } finally {
      await runner.close();
    }
  });
});

describe('run without a compile', () => {
  it('says what to do', async () => {
    const d = tmp();
    await expect(openRunner(d)).rejects.toThrow(/no compile\.json \(run weight-spec compile/);
  });
});
