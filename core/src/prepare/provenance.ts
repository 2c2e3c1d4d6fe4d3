/**
 * Does a prepared folder hold what its name and the export say? prepare names its default
 * folder `<name>-prepared-<dtype>-<first 10 hex of the plan fingerprint>`, and export records
 * the source checkpoint and that folder in export-report.json. A folder replaced by another
 * prepare (issue #28: a repository's report steered Prepare into the user's folder with
 * other weights) keeps its name but its manifest records another source and fingerprint;
 * `check` and `compile` say so as an error instead of binding the other weights.
 */
import fs from 'node:fs';
import path from 'node:path';
import { readExportReport } from '../artifacts/export-report';
import { parsePreparedFolderName } from '../artifacts/prepared-folder';
import { printable } from '../paths';
import type { PreparedManifest } from '../artifacts/prepared-manifest';

function realOf(p: string): string {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return path.resolve(p);
  }
}

/**
 * One line when `preparedDir`'s manifest disagrees with its folder name's fingerprint, or
 * with the source checkpoint the report of `exportDir` records for that folder; else undefined.
 */
export function preparedMismatch(exportDir: string, preparedDir: string, manifest: PreparedManifest): string | undefined {
  const shown = printable(preparedDir);
  // prepare names its folder with the first 10 hex of the plan fingerprint
  const parsed = parsePreparedFolderName(path.basename(preparedDir));
  const named = parsed && parsed.hash.length === 10 ? parsed.hash : undefined;
  if (named && !manifest.fingerprint.startsWith(named)) {
    return (
      `${shown}: its manifest's fingerprint ${manifest.fingerprint.slice(0, 10)} is not the ${named} its name says ` +
      `(prepared from ${printable(manifest.source)}: another prepare replaced this folder); re-run weight-spec prepare`
    );
  }
  const report = readExportReport(exportDir);
  const source = report?.source?.checkpoint;
  const dir = report?.prepared?.dir;
  if (!source || !dir || realOf(path.resolve(exportDir, dir)) !== realOf(preparedDir)) return undefined;
  if (realOf(path.resolve(exportDir, source)) !== realOf(manifest.source)) {
    return (
      `${shown}: prepared from ${printable(manifest.source)}, but ${printable(path.join(exportDir, 'export-report.json'))} ` +
      `says this export's source is ${printable(source)}; re-run weight-spec prepare --checkpoint ${printable(source)}`
    );
  }
  return undefined;
}
