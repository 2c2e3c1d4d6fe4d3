/**
 * Issue #46's LoRA acceptance path through the real CLI, for every LoRA fixture (BUILT_LORA):
 * export --config <base> --lora adapter_a --lora adapter_b → prepare --lora (same adapters) →
 * compile (ORT) → run --lora-id 0|1|2 against the reference's base / adapter_a / adapter_b
 * logits (≤ 1e-4) and greedy tokens, and one batch with a different adapter per row
 * (--input-ids rows, --lora-ids) against the reference's batch, row by row. ONNX's own checker
 * passes on the exported graph and the compiled artifact.
 *
 * The references come from HF's Llama + PEFT's unmerged LoRA (reference.json's note), not
 * from this code; the stacked layout follows QEfficient's LinearMultiLoRA
 * (QEfficient/peft/lora/layers.py, quic/efficient-transformers ebf55e8159c8b87bff6d8028541b824244b16c81).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { cliStdout } from '../../../test/support/cli';
import { BUILT_LORA, describeFixtures, fixturesDir, float16Tolerance, type LoraFixtureRef } from '../../../test/support/fixtures';
import { checkOnnx, haveOnnxChecker } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';
import { maxAbsDiff } from '../support/graph-support';
import { parseWireModel } from '../../src/formats/onnx/wire-model';

const tmp = tempDirs('ws-lora-e2e-');
const ws = (cwd: string, ...args: string[]) => cliStdout(cwd, ...args);

describeFixtures('export --lora → prepare --lora → compile → run --lora-id equals the LoRA fixtures', () => {
  for (const fam of BUILT_LORA) {
    it(`${fam}: base, each adapter and a batch with an adapter per row`, async () => {
      const dir = tmp();
      const src = path.join(fixturesDir(), fam);
      const ref = JSON.parse(readFileSync(path.join(src, 'reference.json'), 'utf8')) as LoraFixtureRef;
      const base = path.resolve(src, ref.base_fixture);
      // adapters in their lora_id order (QEfficient numbers them as loaded; 0 = base)
      const adapters = Object.entries(ref.adapters).sort((a, b) => a[1].lora_id - b[1].lora_id);
      const loraArgs = adapters.flatMap(([, a]) => ['--lora', path.join(src, a.path)]);
      const out = path.join(dir, 'export');
      const prepared = path.join(dir, 'prepared');
      const exported = await ws(dir, 'export', '--config', base, '--out', out, '--ctx-len', '32', ...loraArgs);
      expect(exported).toMatch(/LoRA +lora_ids \[batch, 1\] picks 0 \(base\) or 1 = adapter_a, 2 = adapter_b/);
      await ws(dir, 'prepare', '--checkpoint', base, '--dtype', 'float32', '--out', prepared, ...loraArgs);
      await ws(dir, 'compile', out, '--prepared', prepared);

      // the graph: QEfficient's lora_ids [batch_size, 1] int64, and the stacked weights named in the spec
      const graph = parseWireModel(readFileSync(path.join(out, 'model.onnx')), 'model.onnx');
      const ids = graph.inputs.find((i) => i.name === 'lora_ids')!;
      expect(ids.dims).toEqual(['batch_size', 1]);
      const spec = JSON.parse(readFileSync(path.join(out, 'weight_spec.json'), 'utf8')) as {
        files: { path: string }[];
        inputs: { name: string; location: { file: number; key: string } }[];
      };
      const lora = spec.inputs.filter((i) => /\.lora_[ab]_weights$/.test(i.name));
      // adapter_b targets all seven Linears of both layers: 14 modules, an A and a B each
      expect(lora.length).toBe(28);
      for (const i of lora) expect(spec.files[i.location.file]!.path).toMatch(/lora-adapters\.safetensors$/);
      for (const [name, c] of Object.entries(ref.cases)) {
        const id = c.adapter === null ? 0 : ref.adapters[c.adapter]!.lora_id;
        const seq = [...ref.input_ids, ...c.generated_ids.slice(0, -1)];
        const dump = path.join(dir, `${name}.json`);
        await ws(dir, 'run', out, '--input-ids', seq.join(','), '--lora-id', String(id), '--dump-logits', dump);
        const rows = (JSON.parse(readFileSync(dump, 'utf8')) as { logits: number[][] }).logits;
        expect(maxAbsDiff(rows, c.logits), `${name} (lora id ${id})`).toBeLessThanOrEqual(1e-4);
        const gen = await ws(dir, 'run', out, '--input-ids', ref.input_ids.join(','), '--lora-id', String(id), '--max-new-tokens', '5');
        expect(gen.trim(), `${name} greedy`).toBe(c.generated_ids.join(','));
      }
      // the adapters change the logits: the cases are not all the base's
      expect(maxAbsDiff(ref.cases.adapter_a!.logits, ref.cases.base!.logits)).toBeGreaterThan(1e-2);

      // one batch, a different adapter per row
      const b = ref.batch;
      const loraIds = b.lora_ids.map((r) => r[0]!).join(',');
      const rows = b.input_ids.map((r, i) => [...r, ...b.generated_ids[i]!.slice(0, -1)].join(',')).join(';');
      const dump = path.join(dir, 'batch.json');
      await ws(dir, 'run', out, '--input-ids', rows, '--lora-ids', loraIds, '--dump-logits', dump, '--max-new-tokens', '0');
      const got = (JSON.parse(readFileSync(dump, 'utf8')) as { logits: number[][][] }).logits;
      expect(got.length).toBe(b.input_ids.length);
      got.forEach((r, i) => expect(maxAbsDiff(r, b.logits[i]!), `batch row ${i} (lora id ${b.lora_ids[i]![0]})`).toBeLessThanOrEqual(1e-4));
      const prompts = b.input_ids.map((r) => r.join(',')).join(';');
      const tokens = await ws(dir, 'run', out, '--input-ids', prompts, '--lora-ids', loraIds, '--max-new-tokens', '5');
      expect(tokens.trim().split('\n')).toEqual(b.generated_ids.map((g) => g.join(',')));

      // inspect names the adapters each id picks
      expect(await ws(dir, 'inspect', path.join(out, 'model.onnx'))).toMatch(
        /LoRA: lora_ids \[batch, 1\] picks 0 \(base\) or 1 = .*adapter_a, 2 = .*adapter_b/,
      );

      // continuous batching (QEfficient's batch_index beside lora_ids): each row in its own cache row, the same tokens
      const cb = path.join(dir, 'export-cb');
      await ws(dir, 'export', '--config', base, '--out', cb, '--ctx-len', '32', '--continuous-batching', '--batch-size', '3', ...loraArgs);
      await ws(dir, 'compile', cb, '--prepared', prepared);
      const cbTokens = await ws(dir, 'run', cb, '--input-ids', prompts, '--lora-ids', loraIds, '--max-new-tokens', '5');
      expect(cbTokens.trim().split('\n')).toEqual(b.generated_ids.map((g) => g.join(',')));
      if (haveOnnxChecker()) {
        const compiled = readdirSync(prepared).filter((f) => f.startsWith('compiled-') && f.endsWith('.onnx'));
        const res = checkOnnx([path.join(out, 'model.onnx'), ...compiled.map((f) => path.join(prepared, f))]);
        for (const r of res) expect(r.ok ? '' : `${r.file}: ${r.error}`).toBe('');
      }
    });

    it(`${fam}: float16 graph and prepared adapters, every case within the float16 tolerance; check finds no error`, async () => {
      const dir = tmp();
      const src = path.join(fixturesDir(), fam);
      const ref = JSON.parse(readFileSync(path.join(src, 'reference.json'), 'utf8')) as LoraFixtureRef;
      const base = path.resolve(src, ref.base_fixture);
      const loraArgs = Object.values(ref.adapters)
        .sort((a, b) => a.lora_id - b.lora_id)
        .flatMap((a) => ['--lora', path.join(src, a.path)]);
      const out = path.join(dir, 'export');
      const prepared = path.join(dir, 'prepared');
      await ws(dir, 'export', '--config', base, '--out', out, '--ctx-len', '32', '--dtype', 'float16', ...loraArgs);
      await ws(dir, 'prepare', '--checkpoint', base, '--dtype', 'float16', '--out', prepared, ...loraArgs);
      await ws(dir, 'compile', out, '--prepared', prepared);
      for (const [name, c] of Object.entries(ref.cases)) {
        const id = c.adapter === null ? 0 : ref.adapters[c.adapter]!.lora_id;
        const dump = path.join(dir, `${name}.json`);
        const seq = [...ref.input_ids, ...c.generated_ids.slice(0, -1)];
        await ws(dir, 'run', out, '--input-ids', seq.join(','), '--lora-id', String(id), '--dump-logits', dump);
        const rows = (JSON.parse(readFileSync(dump, 'utf8')) as { logits: number[][] }).logits;
        expect(maxAbsDiff(rows, c.logits), `${name} float16`).toBeLessThanOrEqual(float16Tolerance(path.basename(base)));
      }
      // check: lora_ids is a runtime input, not an unmapped weight; the adapter keys are in prepare's plan
      // (the spec's own prepared folder is not written here: prepare went to --out)
      const checked = await ws(dir, 'check', out);
      expect(checked).toMatch(/: 0 errors, 1 warning\n$/);
      expect(checked).toMatch(/\[not-prepared\]/);
    });
  }
});
