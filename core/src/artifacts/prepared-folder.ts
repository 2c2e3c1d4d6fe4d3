/**
 * The prepared folders' names, in one place: prepare's own `<name>-prepared-<dtype>-<hash>`
 * (the first 10 hex of the plan fingerprint) and QEfficient's `<name>-qeff-prepared-<dtype>`.
 * Prepare and export name folders with these; compile, check and the editor recognise them.
 *
 * QEfficient's names and home (quic/efficient-transformers, `QEfficient/exporter/weight_free/export.py`
 * `_prepare_checkpoint_for_weight_free_export`): the weight-free PR head 277283b5 writes
 * `<source>.parent/<name>-qeff-prepared-<dtype>`; later versions of that branch put it under
 * `QEFF_CHECKPOINT_HOME` when set (`QEfficient/utils/cache.py`; one version reads `QEFF_WF_HOME`
 * into it), and one names it `<name>-wf-<dtype>`. main (ebf55e81) has no weight-free exporter yet,
 * so the name written is the PR head's `-qeff-prepared-<dtype>`, under the home when one is set;
 * both names are read.
 */
import { isPrepareDtype, PREPARE_DTYPES, type PrepareDtype } from '../formats/dtype';

/** Prepare's default output folder name. */
export function preparedFolderName(name: string, dtype: string, planHash: string): string {
  return `${name}-prepared-${dtype}-${planHash}`;
}

/** QEfficient's prepared folder name (its export.py links it into the export directory). */
export function qeffPreparedFolderName(name: string, dtype: string): string {
  return `${name}-qeff-prepared-${dtype}`;
}

/** The newer branch's name `<name>-wf-<dtype>`, read (never written). */
export function qeffWfFolderName(name: string, dtype: string): string {
  return `${name}-wf-${dtype}`;
}

/**
 * QEfficient's checkpoint home: `QEFF_CHECKPOINT_HOME`, else `QEFF_WF_HOME` (the variable one
 * version of `QEfficient/utils/cache.py` reads into QEFF_CHECKPOINT_HOME); undefined when neither
 * is set (the folder goes beside the source). A leading `~/` is the home directory (`expanduser`).
 */
export function qeffCheckpointHome(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const v = env.QEFF_CHECKPOINT_HOME || env.QEFF_WF_HOME;
  if (!v) return undefined;
  return v === '~' || v.startsWith('~/') ? (env.HOME ?? '') + v.slice(1) : v;
}

const OURS = new RegExp(`^(.+)-prepared-(${PREPARE_DTYPES.join('|')})-([0-9a-f]{6,})$`);
const QEFF = new RegExp(`-(qeff-prepared-[A-Za-z0-9_]+|wf-(${PREPARE_DTYPES.join('|')}))$`);

/** The parts of a prepare-named folder (base name): the source's name, the dtype and the plan-hash prefix. */
export function parsePreparedFolderName(base: string): { name: string; dtype: PrepareDtype; hash: string } | undefined {
  const m = OURS.exec(base);
  // OURS admits only PREPARE_DTYPES; the guard carries that to the type without a cast.
  const dtype = m?.[2];
  return m && isPrepareDtype(dtype) ? { name: m[1]!, dtype, hash: m[3]! } : undefined;
}

/** True when a folder's base name is one of QEfficient's prepared names (`-qeff-prepared-<dtype>`, `-wf-<dtype>`). */
export function isQeffPreparedName(base: string): boolean {
  return QEFF.test(base);
}

/** True when a folder (base name or path) is named as prepare or QEfficient names prepared folders. */
export function looksPreparedName(dir: string): boolean {
  return QEFF.test(dir) || OURS.test(dir.split(/[\\/]/).pop() ?? '');
}
