/**
 * The models of the user's Hugging Face cache, for the editor's "Export Model…" pick: each
 * repo's snapshot at `refs/main` (else its newest snapshot), with the bytes its blobs take, the
 * config's `model_type` and whether `export --config` supports that family. Reads only the
 * cache's folders, refs and config.json files (vscode-free, so it is tested without an editor).
 */
import fs from 'node:fs';
import path from 'node:path';
import { hubCacheDir, hubOriginOf, type HubOrigin } from '../hub/hf-cache';
import { familyOf } from '../export/families/registry';
import { VLM_MODEL_TYPES } from '../export/vlm/config';
import { isEmbeddingConfig } from '../export/embedding/encoder-config';
import { isWhisperConfig } from '../export/whisper/whisper-config';
import { readJsonTextSync } from '../paths';

/** One cached model. */
export interface CachedModel extends HubOrigin {
  /** Bytes of the repo's blobs (what the model takes on disk). */
  bytes: number;
  /** `model_type` of its config.json (absent when there is none, e.g. a dataset-like repo). */
  modelType?: string;
  /** True when `export --config` builds this family. */
  supported: boolean;
}

function supportedType(raw: unknown, file: string): boolean {
  const t = (raw as { model_type?: unknown } | null)?.model_type;
  if ((VLM_MODEL_TYPES as readonly unknown[]).includes(t) || isWhisperConfig(raw) || isEmbeddingConfig(raw)) return true;
  try {
    familyOf(raw, file);
    return true;
  } catch {
    return false;
  }
}

/** The cached models of `env`'s cache, by id; an absent or unreadable cache gives none. */
export function listCachedModels(env: NodeJS.ProcessEnv = process.env): CachedModel[] {
  const cache = hubCacheDir(env);
  let repos: string[];
  try {
    repos = fs.readdirSync(cache).filter((n) => n.startsWith('models--'));
  } catch {
    return [];
  }
  const out: CachedModel[] = [];
  for (const name of repos.sort()) {
    const repo = path.join(cache, name);
    let snaps: string[];
    try {
      snaps = fs.readdirSync(path.join(repo, 'snapshots'));
    } catch {
      continue;
    }
    const origins = snaps.map((c) => hubOriginOf(path.join(repo, 'snapshots', c), env)).filter((o): o is HubOrigin => !!o);
    const pick =
      origins.find((o) => o.revision === 'main') ?? origins.sort((a, b) => fs.statSync(b.dir).mtimeMs - fs.statSync(a.dir).mtimeMs)[0];
    if (!pick) continue;
    let bytes = 0;
    try {
      for (const b of fs.readdirSync(path.join(repo, 'blobs'))) bytes += fs.statSync(path.join(repo, 'blobs', b)).size;
    } catch {
      /* no blobs folder: 0 */
    }
    const cfgFile = path.join(pick.dir, 'config.json');
    let raw: unknown;
    try {
      raw = JSON.parse(readJsonTextSync(cfgFile));
    } catch {
      raw = undefined;
    }
    const t = (raw as { model_type?: unknown } | undefined)?.model_type;
    out.push({
      ...pick,
      bytes,
      ...(typeof t === 'string' ? { modelType: t } : {}),
      supported: raw !== undefined && supportedType(raw, cfgFile),
    });
  }
  return out;
}
