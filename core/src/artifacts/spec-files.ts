/**
 * Where a spec's `files[].path` lead: the one resolver behind every reader of a spec's files
 * (check, the graph panel's checkpoint link, `prepare --spec`, compile's locating, run's model
 * folders). First the spec's own path, relative to its folder (QEfficient's link to the
 * prepared folder followed); when that finds nothing, the same path inside the prepared folder
 * the export's report names (export-report.ts `reportedPreparedFile`): export links the folder
 * only once it exists, and a later prepare may make it (link-prepared.ts then adds the link).
 */
import fs from 'node:fs';
import path from 'node:path';
import { readJsonTextSync } from '../paths';
import { specFileIn } from '../spec/file-names';
import { reportedPreparedDir, reportedPreparedFile } from './export-report';

/** Where one spec file path leads. */
export interface SpecFileLocation {
  /** Absolute path: as the spec writes it, or inside the reported prepared folder. */
  abs: string;
  /** Something is at `abs` (a link followed). */
  exists: boolean;
  /** Found through the export's report, the spec's own path leading nowhere. */
  viaReport: boolean;
  /** With `viaReport`: the reported prepared folder the path goes through. */
  reportedDir?: string;
}

/** The resolver of one spec's folder (the export's report is read once, when first needed). */
export interface SpecFileResolver {
  readonly specDir: string;
  /**
   * Where `filePath` (as the spec writes it) leads. `asWritten` is the caller's own resolution
   * of the spec's path (check resolves it under its read policy); by default the path resolved
   * against the spec's folder, and whether it exists.
   */
  file(filePath: string, asWritten?: { abs: string; exists: boolean }): SpecFileLocation;
  /** The prepared folder the export's report names (absolute), when it names one. */
  reportedDir(): string | undefined;
}

/** A {@link SpecFileResolver} for the spec(s) in `specDir`. */
export function specFileResolver(specDir: string): SpecFileResolver {
  const dir = path.resolve(specDir);
  let reported: { dir: string | undefined } | undefined;
  const reportedDir = (): string | undefined => (reported ??= { dir: reportedPreparedDir(dir) }).dir;
  return {
    specDir: dir,
    reportedDir,
    file(filePath, asWritten) {
      const own = asWritten ?? { abs: path.resolve(dir, filePath), exists: fs.existsSync(path.resolve(dir, filePath)) };
      if (own.exists) return { abs: own.abs, exists: true, viaReport: false };
      const r = reportedPreparedFile(dir, filePath, reportedDir());
      if (!r) return { abs: own.abs, exists: false, viaReport: false };
      const abs = path.join(r.dir, r.rest);
      return { abs, exists: fs.existsSync(abs), viaReport: true, reportedDir: r.dir };
    },
  };
}

/**
 * The folder an export's spec files lie in, found through {@link specFileResolver}: the real
 * folder of the first file when it exists, else the reported prepared folder the path goes
 * through; undefined when neither exists. `firstFile` is the spec's `files[0].path` (read
 * from the folder's spec when not given).
 */
export function specFilesFolder(specDir: string, firstFile: string | undefined = specFilePaths(specDir)[0]): string | undefined {
  const resolver = specFileResolver(specDir);
  if (firstFile) {
    const loc = resolver.file(firstFile);
    if (loc.exists) {
      try {
        return path.dirname(fs.realpathSync.native(loc.abs));
      } catch {
        return undefined;
      }
    }
    if (loc.reportedDir && fs.existsSync(loc.reportedDir)) return loc.reportedDir;
  }
  const d = resolver.reportedDir();
  return d && fs.existsSync(d) ? d : undefined;
}

/**
 * The `files[].path` of the spec in `dir` (specFileIn), by plain JSON.parse: empty when there is
 * no spec or it does not parse (whether it is valid is check's business, not a locator's).
 */
export function specFilePaths(dir: string): string[] {
  const file = specFileIn(dir);
  return file ? specFilePathsOf(file) : [];
}

/** The `files[].path` values of the spec file `specFile` (v1's bare strings too), by plain JSON.parse; empty when unreadable. */
export function specFilePathsOf(specFile: string): string[] {
  let raw: unknown;
  try {
    raw = JSON.parse(readJsonTextSync(specFile));
  } catch {
    return [];
  }
  const files = raw && typeof raw === 'object' ? (raw as { files?: unknown }).files : undefined;
  if (!Array.isArray(files)) return [];
  return files.flatMap((f: unknown) => {
    const p = typeof f === 'string' ? f : f && typeof f === 'object' ? (f as { path?: unknown }).path : undefined;
    return typeof p === 'string' && p ? [p] : [];
  });
}
