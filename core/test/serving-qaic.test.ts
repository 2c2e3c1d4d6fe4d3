/**
 * The qaic dry run of a CCL export lists one specialization per bucket, as
 * `QEFFAutoModelForCausalLM.compile` builds them (quic/efficient-transformers
 * `QEfficient/transformers/models/modeling_auto.py`, commit a53a44dfd3efe0fe6fe11d8abccf184c4e6027fd:
 * `for i in range(len(self.comp_ctx_lengths_prefill)): specializations.append(
 * self.build_prefill_specialization(…, comp_ctx_lengths=self.comp_ctx_lengths_prefill[i], …))`,
 * then the decode buckets), after `process_ccl_specializations`
 * (`QEfficient/utils/check_ccl_specializations.py`): values capped at ctx_len, a prefill bucket
 * that is also a decode bucket lowered by one, and with prefill_seq_len 1 the sorted union for both.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { cclLists } from '../src/compile/qaic-command';
import { SYNTHETIC_CONFIGS } from './graph-random';
import { tempDirs } from '../../test/support/temp';
import { ws } from './serving-support';

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
  expect(cclLists({ prefill: [16], decode: [16, 32] }, 32, 32)).toEqual({ prefill: [15], decode: [16, 32] });
  expect(cclLists({ prefill: [64, 16, 15], decode: [16, 48] }, 32, 8)).toEqual({ prefill: [14, 15, 31], decode: [16, 32] }); // 16 → 15 taken → 14; 64 → 32 → 31
  expect(cclLists({ prefill: [16, 8], decode: [16, 32] }, 32, 1)).toEqual({ prefill: [8, 16, 32], decode: [8, 16, 32] });
  expect(cclLists({ prefill: [], decode: [16] }, 32, 4)).toEqual({ prefill: [32], decode: [16] });
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
    '32',
    '--comp-ctx-lengths-prefill',
    '8,16',
    '--comp-ctx-lengths-decode',
    '16,32',
  ]);
  const sym = (seq: number, ccl: number) => ({ batch_size: '1', comp_ctx_lengths: String(ccl), ctx_len: '32', seq_len: String(seq) });
  expect(await dryRunSpecs(root, out, ['--prefill-seq-len', '4'])).toEqual([
    { name: 'Prefill', symbols: sym(4, 8) },
    { name: 'Prefill', symbols: sym(4, 15) },
    { name: 'Decode', symbols: sym(1, 16) },
    { name: 'Decode', symbols: sym(1, 32) },
  ]);
  // prefill_seq_len 1: no separate decode entries (build_decode_specialization returns None), the union as prefill buckets
  expect(await dryRunSpecs(root, out, ['--prefill-seq-len', '1'])).toEqual(
    [8, 16, 32].map((c) => ({ name: 'Decode', symbols: sym(1, c) })),
  );
  // a plain export keeps the two entries without comp_ctx_lengths
  const plain = path.join(root, 'plain');
  await ws(root, ['export', '--config', configDir(root), '--out', plain, '--ctx-len', '32']);
  expect((await dryRunSpecs(root, plain, ['--prefill-seq-len', '4'])).map((s) => s.symbols.comp_ctx_lengths)).toEqual([
    undefined,
    undefined,
  ]);
});

it('continuous batching: the CCL entries carry full_batch_size (and full_batch_exec_size for prefill)', async () => {
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
  expect(await dryRunSpecs(root, out, ['--prefill-seq-len', '8'])).toEqual([
    {
      name: 'Prefill',
      symbols: { batch_size: '1', comp_ctx_lengths: '16', ctx_len: '32', full_batch_exec_size: '4', full_batch_size: '4', seq_len: '8' },
    },
    { name: 'Decode', symbols: { batch_size: '4', comp_ctx_lengths: '32', ctx_len: '32', full_batch_size: '4', seq_len: '1' } },
  ]);
});
