/**
 * `prepare --lora`: the stacked adapters are prepared like every other tensor — planned into
 * one task, recorded in the manifest with the adapter files among the sources (so changing an
 * adapter makes the folder stale and the next prepare rewrites it), an unchanged plan a no-op.
 * And the slot kernel on numbers worked by hand: A `[r, in]` → `[in, R]`, B `[out, r]` →
 * `[R, out]` times the scaling, zero past r.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { cliInProcess, cliStdout } from '../../../test/support/cli';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { loraSlot } from '../../src/prepare/lora-plan';
import { preparedStatus, readPreparedManifest } from '../../src/prepare';

const tmp = tempDirs('ws-prepare-lora-');

it('loraSlot: A transposed and zero-padded to R, B transposed and scaled, no source = zeros', () => {
  // A [r 2, in 3] = [[1,2,3],[4,5,6]] → [in 3, R 3]
  expect(Array.from(loraSlot(Float32Array.from([1, 2, 3, 4, 5, 6]), 'A', 2, 3, 3))).toEqual([1, 4, 0, 2, 5, 0, 3, 6, 0]);
  // B [out 2, r 2] = [[1,2],[3,4]] · 0.5 → [R 3, out 2]
  expect(Array.from(loraSlot(Float32Array.from([1, 2, 3, 4]), 'B', 2, 3, 2, 0.5))).toEqual([0.5, 1.5, 1, 2, 0, 0]);
  expect(Array.from(loraSlot(undefined, 'B', 0, 2, 2))).toEqual([0, 0, 0, 0]);
});

describeFixtures('prepare --lora: manifest, staleness, up to date', () => {
  it('records the adapters, is up to date when nothing changed, stale when an adapter changed, and rewrites it', async () => {
    const root = tmp();
    // the adapters name ../../llama as their base: copied side by side
    fs.cpSync(path.join(fixturesDir(), 'llama'), path.join(root, 'llama'), { recursive: true });
    fs.cpSync(path.join(fixturesDir(), 'llama_lora'), path.join(root, 'llama_lora'), { recursive: true });
    const base = path.join(root, 'llama');
    const a = path.join(root, 'llama_lora', 'adapter_a');
    const b = path.join(root, 'llama_lora', 'adapter_b');
    const out = path.join(root, 'prepared');
    const args = ['prepare', '--checkpoint', base, '--dtype', 'float32', '--out', out, '--lora', a, '--lora', b];
    const first = await cliStdout(root, ...args);
    expect(first).toMatch(/2 LoRA adapter\(s\) stacked for 14 Linears, rank 8: 1 = .*adapter_a, 2 = .*adapter_b \(0 = base\)/);
    const m = await readPreparedManifest(out);
    const lora = m.tasks.find((t) => t.transform === 'lora-stack')!;
    expect(lora.file).toBe('lora-adapters.safetensors');
    expect(lora.outputs).toContain('model.layers.0.mlp.down_proj.lora_b_weights');
    expect(m.source_files.map((f) => path.resolve(base, f.path))).toEqual(
      expect.arrayContaining([path.join(a, 'adapter_model.safetensors'), path.join(b, 'adapter_config.json')]),
    );
    expect(m.output_files.map((f) => f.path)).toContain('lora-adapters.safetensors');
    expect(await cliStdout(root, ...args)).toMatch(/up to date/);
    // an adapter rewritten after prepare: stale, and the next prepare writes the folder again
    const later = new Date(Date.now() + 5000);
    fs.utimesSync(path.join(b, 'adapter_model.safetensors'), later, later);
    expect((await preparedStatus(out)).state).toBe('stale');
    expect(await cliStdout(root, ...args)).not.toMatch(/up to date/);
    expect((await preparedStatus(out)).state).toBe('prepared');
    // --spec with --lora is refused with one line
    fs.writeFileSync(path.join(root, 'spec.json'), '{}');
    const r = await cliInProcess([...args, '--spec', path.join(root, 'spec.json')], { cwd: root });
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')[0]).toMatch(/--spec with --lora is not supported yet/);
  });
});
