/**
 * QEfficient's link from an export to its prepared folder, made after the fact: export links
 * the folder only when it exists (`link_prepared_checkpoint_dir`, write-export.ts), so an
 * export made before Prepare has none, and every reader of the spec's own `files[].path`
 * (QEfficient's ORT injection, a user, the graph panel) would find nothing. Prepare from the
 * editor, `prepare --spec` and a compile that finds the folder call {@link linkPreparedFolder}.
 *
 * docs/SAFETY.md: the link is made only in a folder whose export-report.json is ours and
 * complete, only to a complete prepared folder (its sentinel) holding every file the spec
 * names (never dangling); the report claims it first (so a re-export owns it and removes it
 * when it names another folder); nothing it did not make is replaced (the output guard), and
 * the link is made under a temp name and renamed.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { createOutputGuard, readJsonTextSync, tempPathFor } from '../paths';
import { EXPORT_REPORT_FILE, readExportReport } from './export-report';
import { SENTINEL_FILE } from './prepared-manifest';
import { specFilePaths } from './spec-files';

/** What {@link linkPreparedFolder} did: made or found the link, or why it left the folder alone. */
export type PreparedLinkResult = { linked: string; made: boolean } | { skipped: string };

/**
 * Links `<exportDir>/<name>` → `preparedDir`, `name` being the first segment every spec file
 * path shares (`<name>-prepared-<dtype>-<hash>/…`), `specPaths` those paths when the caller has
 * read the spec (else they are read here). Never throws for a state it leaves alone.
 */
export async function linkPreparedFolder(
  exportDir: string,
  preparedDir: string,
  specPaths?: readonly string[],
): Promise<PreparedLinkResult> {
  const dir = path.resolve(exportDir);
  const report = readExportReport(dir);
  if (!report || report.state !== 'complete') return { skipped: `${dir}: no complete export-report.json of weight-spec export` };
  // the spec's file paths: given by a caller that has read the spec already (compile reads each input once)
  const paths = specPaths ? [...specPaths] : specFilePaths(dir);
  const heads = new Set(
    paths.map((p) => p.split(/[\\/]/).filter((s) => s && s !== '.')).map((s) => (s.length >= 2 && !s.includes('..') ? s[0] : '')),
  );
  const name = heads.size === 1 ? [...heads][0] : undefined;
  if (!name) return { skipped: `${dir}: the spec's files do not all lie in one folder named beside it` };
  let real: string;
  try {
    real = fs.realpathSync.native(path.resolve(preparedDir));
  } catch {
    return { skipped: `${preparedDir}: no such prepared folder` };
  }
  if (!fs.existsSync(path.join(real, SENTINEL_FILE))) return { skipped: `${real}: not a complete prepared folder (no ${SENTINEL_FILE})` };
  const rest = (p: string) =>
    p
      .split(/[\\/]/)
      .filter((s) => s && s !== '.')
      .slice(1)
      .join('/');
  const missing = paths.find((p) => !fs.existsSync(path.join(real, rest(p))));
  if (missing !== undefined) return { skipped: `${real}: has no ${rest(missing)} (the spec names ${missing})` };

  // The link bears the folder's own name (QEfficient's `prepared_out.name`): a folder of another name is not the one the spec names.
  if (path.basename(real) !== name) return { skipped: `${real}: not the folder ${name} the spec names` };
  const at = path.join(dir, name);
  const ours = report.links.includes(name);
  const st = fs.lstatSync(at, { throwIfNoEntry: false });
  if (st) {
    if (st.isSymbolicLink() && realOrUndefined(at) === real) return { linked: at, made: false };
    if (!ours || !st.isSymbolicLink()) return { skipped: `${at} exists and was not made by weight-spec; left as it is` };
  }
  const guard = createOutputGuard(dir, { create: false, owned: [EXPORT_REPORT_FILE, ...(ours ? [name] : [])] });
  const target = guard.target(name);
  if (!ours) {
    // The report claims the link before it exists: a run stopped in between leaves a claim
    // (harmless: export skips a claimed link that is absent), never an unclaimed link.
    const raw = JSON.parse(readJsonTextSync(path.join(dir, EXPORT_REPORT_FILE))) as Record<string, unknown>;
    await guard.writeFile(EXPORT_REPORT_FILE, JSON.stringify({ ...raw, links: [...report.links, name] }, null, 2) + '\n');
  }
  await atomicSymlink(target, real);
  return { linked: at, made: true };
}

/** Makes (or replaces) the symlink `at` → `target` under a temp name, then renames it over. */
export async function atomicSymlink(at: string, target: string): Promise<void> {
  const tmp = tempPathFor(at);
  await fsp.symlink(target, tmp);
  try {
    await fsp.rename(tmp, at);
  } catch (e) {
    await fsp.rm(tmp, { force: true });
    throw e;
  }
}

function realOrUndefined(p: string): string | undefined {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return undefined;
  }
}
