/**
 * The qaic dry run of a CCL export lists one specialization per bucket, as
 * `QEFFAutoModelForCausalLM.compile` builds them (quic/efficient-transformers
 * `QEfficient/transformers/models/modeling_auto.py`, commit a53a44dfd3efe0fe6fe11d8abccf184c4e6027fd:
 * `for i in range(len(self.comp_ctx_lengths_prefill)): specializations.append(
 * self.build_prefill_specialization(…, comp_ctx_lengths=self.comp_ctx_lengths_prefill[i], …))`,
 * then the decode buckets; names from the `_graph_name` tags of main ebf55e81), after `process_ccl_specializations`
 * (`QEfficient/utils/check_ccl_specializations.py` `validate_ccl_lists`, main ebf55e81 = the
 * weight-free PR head 277283b5): values below `CCL_MIN_CTX_LEN` (1024) raised to it, ctx_len
 * appended to a list that ends below it, values capped at ctx_len, a prefill bucket that is also a
 * decode bucket lowered to the multiple of `CCL_UNIQNE_STEP` (32) below it
 * (`val = (val - 1) // CCL_UNIQNE_STEP * CCL_UNIQNE_STEP`), and with prefill_seq_len 1 the sorted
 * union for both. Repeated names get `_<k>` (see qaic-command.ts `uniqueNames`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { cclLists } from '../../src/artifacts/qaic-ccl';
import { SYNTHETIC_CONFIGS } from '../support/graph-random';
import { tempDirs } from '../../../test/support/temp';
import { ws } from '../support/serving-support';

const tmp = tempDirs('ws-ccl-qaic-');

/** The specializations.json the dry run prints, parsed. */
async function dryRunSpecs(root: string, exportDir: string, flags: string[]): Promise<{ name: string; symbols: Record<string, string> }[]> {
  const r = await ws(root, ['compile', exportDir, '--backend', 'qaic', '--dry-run', ...flags], false);
  const text = r.stdout + r.stderr;
  const at = text.indexOf('specializations.json\n');
  expect(at).toBeGreaterThan(0);
  const body = text.slice(at + 'specializations.json\n'.length);
  return (JSON.parse(body.slice(0, body.indexOf('\n---'))) as { specializations: { name: string; symbols: Record<string, string> }[] })
    .specializations;
}

function configDir(root: string): string {
  const d = path.join(root, 'mistral');
  fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(path.join(d, 'config.json'), JSON.stringify(SYNTHETIC_CONFIGS.mistral));
  return d;
}

it('process_ccl_specializations, by hand', async () => {
  // the example: 2048 and 4096 collide with decode → (2048-1)//32*32 = 2016, (4096-1)//32*32 = 4064
  expect(cclLists({ prefill: [1024, 2048], decode: [2048, 4096] }, 4096, 32)).toEqual({
    prefill: [1024, 2016, 4064],
    decode: [2048, 4096],
  });
  // below CCL_MIN_CTX_LEN raised to 1024 (which then collides: 1023//32*32 = 992); ctx_len appended to the prefill list (last 2048 < 4096)
  expect(cclLists({ prefill: [256, 2048], decode: [512, 4096] }, 4096, 32)).toEqual({ prefill: [992, 2048, 4064], decode: [1024, 4096] });
  expect(cclLists({ prefill: [512, 2048], decode: [4096] }, 4096, 1)).toEqual({ prefill: [1024, 2048, 4096], decode: [1024, 2048, 4096] });
  // a missing list is [ctx_len]; ctx_len appended to the decode list (last 2048 < 4096)
  expect(cclLists({ prefill: [], decode: [2048] }, 4096, 4)).toEqual({ prefill: [4064], decode: [2048, 4096] });
  // a ctx_len below 1024: everything raised, then capped at ctx_len 32, then the collision lowered to 31//32*32 = 0 (QEfficient's result too)
  expect(cclLists({ prefill: [8, 16], decode: [16, 32] }, 32, 4)).toEqual({ prefill: [0], decode: [32] });
  // a lowered value that lands on a prefill value already taken walks down again: 2040 → 2016 (taken) → 1984
  expect(cclLists({ prefill: [2016, 2040], decode: [2040, 4096] }, 4096, 32)).toEqual({
    prefill: [1984, 2016, 4064],
    decode: [2040, 4096],
  });
});

it('qaic --dry-run of a CCL export: one Prefill entry per prefill bucket, one Decode entry per decode bucket', async () => {
  const root = tmp();
  const out = path.join(root, 'export');
  await ws(root, [
    'export',
    '--config',
    configDir(root),
    '--out',
    out,
    '--ctx-len',
    '4096',
    '--comp-ctx-lengths-prefill',
    '1024,2048',
    '--comp-ctx-lengths-decode',
    '2048,4096',
  ]);
  const sym = (seq: number, ccl: number) => ({ batch_size: '1', comp_ctx_lengths: String(ccl), ctx_len: '4096', seq_len: String(seq) });
  // repeated names get _0, _1, … (the compiler must not see two graphs with one name)
  expect(await dryRunSpecs(root, out, ['--prefill-seq-len', '4'])).toEqual([
    { name: 'Prefill_0', symbols: sym(4, 1024) },
    { name: 'Prefill_1', symbols: sym(4, 2016) },
    { name: 'Prefill_2', symbols: sym(4, 4064) },
    { name: 'Decode_0', symbols: sym(1, 2048) },
    { name: 'Decode_1', symbols: sym(1, 4096) },
  ]);
  // prefill_seq_len 1: no decode entries (compile skips them), the union as prefill buckets, tagged "Prefill" (prefill_only None)
  expect(await dryRunSpecs(root, out, ['--prefill-seq-len', '1'])).toEqual(
    [1024, 2048, 4096].map((c, i) => ({ name: `Prefill_${i}`, symbols: sym(1, c) })),
  );
  // a plain export keeps the two entries without comp_ctx_lengths
  const plain = path.join(root, 'plain');
  await ws(root, ['export', '--config', configDir(root), '--out', plain, '--ctx-len', '32']);
  expect((await dryRunSpecs(root, plain, ['--prefill-seq-len', '4'])).map((s) => s.symbols.comp_ctx_lengths)).toEqual([
    undefined,
    undefined,
  ]);
});

it('continuous batching: the CCL entries carry full_batch_size (and full_batch_exec_size = exec_batch_size 1 for prefill)', async () => {
  const root = tmp();
  const out = path.join(root, 'export');
  await ws(root, [
    'export',
    '--config',
    configDir(root),
    '--out',
    out,
    '--ctx-len',
    '32',
    '--continuous-batching',
    '--batch-size',
    '4',
    '--comp-ctx-lengths-prefill',
    '16',
    '--comp-ctx-lengths-decode',
    '32',
  ]);
  // prefill 16 and decode 32 are both raised to 1024 then capped at ctx_len 32: the prefill bucket collides and is lowered to 31//32*32 = 0
  expect(await dryRunSpecs(root, out, ['--prefill-seq-len', '8'])).toEqual([
    {
      name: 'Prefill',
      symbols: { batch_size: '1', comp_ctx_lengths: '0', ctx_len: '32', full_batch_exec_size: '1', full_batch_size: '4', seq_len: '8' },
    },
    { name: 'Decode', symbols: { batch_size: '4', comp_ctx_lengths: '32', ctx_len: '32', full_batch_size: '4', seq_len: '1' } },
  ]);
});
