/**
 * The prepared folders' names, in one place: prepare's own `<name>-prepared-<dtype>-<hash>`
 * (the first 10 hex of the plan fingerprint) and QEfficient's `<name>-qeff-prepared-<dtype>`.
 * Prepare and export name folders with these; compile, check and the editor recognise them.
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

const OURS = new RegExp(`^(.+)-prepared-(${PREPARE_DTYPES.join('|')})-([0-9a-f]{6,})$`);
const QEFF = /-qeff-prepared-[A-Za-z0-9_]+$/;

/** The parts of a prepare-named folder (base name): the source's name, the dtype and the plan-hash prefix. */
export function parsePreparedFolderName(base: string): { name: string; dtype: PrepareDtype; hash: string } | undefined {
  const m = OURS.exec(base);
  // OURS admits only PREPARE_DTYPES; the guard carries that to the type without a cast.
  const dtype = m?.[2];
  return m && isPrepareDtype(dtype) ? { name: m[1]!, dtype, hash: m[3]! } : undefined;
}

/** True when a folder's base name is QEfficient's prepared name. */
export function isQeffPreparedName(base: string): boolean {
  return QEFF.test(base);
}

/** True when a folder (base name or path) is named as prepare or QEfficient names prepared folders. */
export function looksPreparedName(dir: string): boolean {
  return QEFF.test(dir) || OURS.test(dir.split(/[\\/]/).pop() ?? '');
}
