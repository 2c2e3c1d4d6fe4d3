/**
 * Prepared-checkpoint checks: a spec that points into a prepared directory (one with a
 * `.checkpoint_prepared.json` manifest, or named `…-qeff-prepared-<dtype>`) needs the
 * sentinel `.checkpoint_prepared` (written last, so its absence means an unfinished or
 * crashed prepare) and source files that still match the manifest (size + mtime).
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { report, type CheckContext } from './context';

/** Manifest of a prepared checkpoint (QEfficient's name). */
export const PREPARED_MANIFEST = '.checkpoint_prepared.json';
/** Sentinel written last by prepare: its absence means an unfinished prepare. */
export const PREPARED_SENTINEL = '.checkpoint_prepared';

/** True when `file` lies in a directory named like a prepared checkpoint. */
export function looksPrepared(file: string): boolean {
  return /-qeff-prepared-[A-Za-z0-9_]+$/.test(path.basename(path.dirname(file)));
}

interface SourceFact {
  file: string;
  size?: number;
  mtimeMs?: number;
}

/** Reads the manifest's source files tolerantly (several spellings of the same facts). */
function sourceFacts(manifest: Record<string, unknown>, dir: string): SourceFact[] {
  const src = manifest.source_files ?? manifest.sources ?? (manifest.source as Record<string, unknown> | undefined)?.files;
  const base = typeof manifest.source === 'string' ? manifest.source : typeof (manifest.source as { dir?: unknown })?.dir === 'string' ? (manifest.source as { dir: string }).dir : dir;
  const out: SourceFact[] = [];
  const push = (name: string, v: Record<string, unknown>) => {
    const size = typeof v.size === 'number' ? v.size : undefined;
    const mtimeMs = typeof v.mtimeMs === 'number' ? v.mtimeMs : typeof v.mtime_ms === 'number' ? v.mtime_ms
      : typeof v.mtime_ns === 'number' ? v.mtime_ns / 1e6 : typeof v.mtime === 'number' ? v.mtime * 1000 : undefined;
    out.push({ file: path.resolve(base, name), size, mtimeMs });
  };
  if (Array.isArray(src)) {
    for (const e of src) {
      if (e && typeof e === 'object') {
        const r = e as Record<string, unknown>;
        const name = r.path ?? r.file ?? r.name;
        if (typeof name === 'string') push(name, r);
      }
    }
  } else if (src && typeof src === 'object') {
    for (const [name, v] of Object.entries(src)) if (v && typeof v === 'object') push(name, v as Record<string, unknown>);
  }
  return out;
}

/** Reports `not-prepared` / `prepared-stale` once per prepared directory the spec uses. */
export async function checkPrepared(ctx: CheckContext): Promise<void> {
  const seen = new Set<string>();
  for (const [i, state] of ctx.files.entries()) {
    if (!state.abs || !state.header) continue;
    const dir = path.dirname(state.abs);
    if (seen.has(dir)) continue;
    seen.add(dir);
    const at = ctx.sources.files[i]!.path;
    let manifest: Record<string, unknown> | undefined;
    try {
      manifest = JSON.parse(await readFile(path.join(dir, PREPARED_MANIFEST), 'utf8')) as Record<string, unknown>;
    } catch (err) {
      const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
      if (!missing) {
        report(ctx, 'not-prepared', 'error', at, `${path.join(dir, PREPARED_MANIFEST)} is unreadable; re-run \`weight-spec prepare\``);
        continue;
      }
      if (!looksPrepared(state.abs)) continue; // an ordinary checkpoint
    }
    if (!(await exists(path.join(dir, PREPARED_SENTINEL)))) {
      report(ctx, 'not-prepared', 'error', at,
        `${ctx.spec.files[i]!.path}: the prepared checkpoint in ${dir} is incomplete (no ${PREPARED_SENTINEL} sentinel); re-run \`weight-spec prepare\``);
      continue;
    }
    if (!manifest || typeof manifest !== 'object') continue;
    for (const fact of sourceFacts(manifest, dir)) {
      const why = await staleReason(fact);
      if (why) {
        report(ctx, 'prepared-stale', 'warning', at,
          `the prepared checkpoint in ${dir} is stale: source ${fact.file} ${why}; re-run \`weight-spec prepare\``);
        break;
      }
    }
  }
}

async function staleReason(f: SourceFact): Promise<string | undefined> {
  try {
    const st = await stat(f.file);
    if (f.size !== undefined && st.size !== f.size) return `changed size (${f.size} → ${st.size} bytes)`;
    if (f.mtimeMs !== undefined && Math.abs(st.mtimeMs - f.mtimeMs) > 1) return 'was modified after prepare';
    return undefined;
  } catch {
    return 'no longer exists';
  }
}

async function exists(p: string): Promise<boolean> {
  try {
    await stat(p);
    return true;
  } catch {
    return false;
  }
}
