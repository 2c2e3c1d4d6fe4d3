/**
 * Model ids as users type them (`org/name`, `org/name@revision`), resolved in the local
 * Hugging Face cache the way huggingface_hub lays it out — never downloaded:
 *
 *   <cache>/models--<org>--<name>/refs/<branch or tag>   → a commit hash (one line)
 *   <cache>/models--<org>--<name>/snapshots/<commit>/…   → files, each a relative symlink to
 *   <cache>/models--<org>--<name>/blobs/<sha>              the blob holding its bytes
 *
 * The cache folder is found as huggingface_hub's `constants.py` finds it: `HF_HUB_CACHE`, else
 * `HF_HOME/hub`, else `$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`.
 * Everything in the cache is input: the tool reads through its symlinks and writes nothing
 * there (see {@link insideHubCache} and {@link modelHome}).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FormatError } from '../errors';
import { isInside, MAX_REF_BYTES, readJsonTextSync, readRegularFileSync } from '../paths';

/** What an id resolved to: the snapshot folder and where it came from. */
export interface HubOrigin {
  /** `org/name`. */
  id: string;
  /** The revision asked for: a branch or tag name, or a commit hash. */
  revision: string;
  /** The snapshot's commit hash (its folder name). */
  commit: string;
  /** The snapshot folder (absolute, inside the cache). */
  dir: string;
}

const ID = /^([A-Za-z0-9][A-Za-z0-9._-]*)\/([A-Za-z0-9][A-Za-z0-9._-]*)(?:@([A-Za-z0-9._/-]+))?$/;
const COMMIT = /^[0-9a-f]{40}$/;

/** The Hugging Face hub cache folder for `env` (huggingface_hub's order). */
export function hubCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.HF_HUB_CACHE) return path.resolve(env.HF_HUB_CACHE);
  if (env.HF_HOME) return path.resolve(env.HF_HOME, 'hub');
  const xdg = env.XDG_CACHE_HOME || path.join(env.HOME || os.homedir(), '.cache');
  return path.resolve(xdg, 'huggingface', 'hub');
}

/** Where weight-spec keeps what it makes for models of the cache: `WEIGHT_SPEC_HOME` or `~/.cache/weight-spec`. */
export function weightSpecHome(env: NodeJS.ProcessEnv = process.env): string {
  if (env.WEIGHT_SPEC_HOME) return path.resolve(env.WEIGHT_SPEC_HOME);
  return path.resolve(env.XDG_CACHE_HOME || path.join(env.HOME || os.homedir(), '.cache'), 'weight-spec');
}

/**
 * The revision of text shaped `org/name@<anything>` when it is no branch, tag or commit name
 * (a `..` or `.` segment, an empty segment, a character git refuses): such text is refused as
 * an id, before it is ever tried as a local path (`org/name@../../x` resolves to `./org/x`).
 */
export function badRevisionOf(text: string): string | undefined {
  const m = /^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*@(.*)$/s.exec(text);
  if (!m) return undefined;
  const rev = m[1]!;
  const ok = /^[A-Za-z0-9._/-]+$/.test(rev) && rev.split('/').every((s) => s !== '' && s !== '.' && s !== '..');
  return ok ? undefined : rev;
}

/** `org/name[@revision]` split, or undefined when `text` is not of that form. */
export function parseModelId(text: string): { id: string; revision?: string } | undefined {
  const m = ID.exec(text);
  if (!m || m[1] === '..' || m[2] === '..' || m[1] === '.' || m[2] === '.' || badRevisionOf(text) !== undefined) return undefined;
  return { id: `${m[1]}/${m[2]}`, ...(m[3] ? { revision: m[3] } : {}) };
}

/** The cache's folder for a repo: `models--org--name`. */
export function repoFolder(cache: string, id: string): string {
  return path.join(cache, `models--${id.replace('/', '--')}`);
}

/**
 * The commit `refs/<revision>` names, undefined when there is no such ref (or it holds no
 * commit). The ref is input like any other file: a FIFO there would block `open()` forever
 * and a link to /dev/zero would grow memory without end, so it is read through the read
 * policy (kind checked before it is opened, at most {@link MAX_REF_BYTES}); such a ref is a
 * one-line FormatError naming it, never a hang.
 */
function readRef(repo: string, revision: string): string | undefined {
  // refs are written by huggingface_hub; a ref name with `..` could leave the folder
  if (revision.split('/').includes('..')) return undefined;
  const file = path.join(repo, 'refs', revision);
  let text: string;
  try {
    text = readRegularFileSync(file, 'utf8', MAX_REF_BYTES).trim();
  } catch (e) {
    if (e instanceof FormatError && e.detail !== 'file does not exist' && !e.detail.startsWith('a parent')) throw e;
    return undefined;
  }
  return COMMIT.test(text) ? text : undefined;
}

/** {@link readRef} for scans (which ref points at a commit?): a ref that cannot be read is no answer. */
function readRefQuiet(repo: string, revision: string): string | undefined {
  try {
    return readRef(repo, revision);
  } catch {
    return undefined;
  }
}

/** `realpath`, or the resolved path when it does not exist. */
function realOf(p: string): string {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return path.resolve(p);
  }
}

/**
 * True when `p`, resolved with every symlink followed, lies inside the cache folder of `env`
 * (itself resolved). A folder laid out as `models--org--name/snapshots/<40 hex>` anywhere
 * else (a repository can ship one) is not a snapshot: its name proves nothing.
 */
export function inHubCacheFolder(p: string, env: NodeJS.ProcessEnv = process.env): boolean {
  return isInside(realOf(hubCacheDir(env)), realOf(p));
}

/**
 * Resolves `id` at `revision` (default `main`) in the cache to its snapshot folder.
 * @throws FormatError naming the places looked at and the command that fetches the model
 */
export function resolveModelId(id: string, revision: string | undefined, env: NodeJS.ProcessEnv, localTried?: string): HubOrigin {
  const cache = hubCacheDir(env);
  const repo = repoFolder(cache, id);
  const rev = revision ?? 'main';
  const commit = COMMIT.test(rev) ? rev : readRef(repo, rev);
  const dir = commit ? path.join(repo, 'snapshots', commit) : undefined;
  if (!dir || !fs.existsSync(dir)) {
    const where = [
      ...(localTried ? [`no folder ${localTried}`] : []),
      `not in the Hugging Face cache (${repo}${commit ? `/snapshots/${commit}` : `, refs/${rev}`})`,
    ];
    const fetch = `huggingface-cli download ${id}${revision ? ` --revision ${revision}` : ''}`;
    throw new FormatError(
      id + (revision ? `@${revision}` : ''),
      `${where.join(', ')}; weight-spec never downloads: fetch it with \`${fetch}\``,
    );
  }
  checkSnapshotComplete(dir, `${id}@${rev}`);
  const origin = { id, revision: rev, commit: commit!, dir };
  resolved.set(dir, origin);
  return origin;
}

/**
 * Snapshots this process resolved from an id, with the revision the user asked for: the
 * report and the manifest record that revision (a pinned tag stays pinned when main moves).
 */
const resolved = new Map<string, HubOrigin>();

/**
 * Refuses a snapshot whose index names a shard that is absent (or whose symlink points at a
 * blob that is not there): an interrupted download, caught before any work starts.
 */
export function checkSnapshotComplete(dir: string, label: string): void {
  const index = path.join(dir, 'model.safetensors.index.json');
  if (!fs.existsSync(index)) return;
  let weightMap: Record<string, unknown>;
  try {
    weightMap = (JSON.parse(readJsonTextSync(index)) as { weight_map?: Record<string, unknown> }).weight_map ?? {};
  } catch {
    return; // the checkpoint reader reports a malformed index with its own message
  }
  for (const shard of new Set(Object.values(weightMap).filter((v): v is string => typeof v === 'string'))) {
    if (shard.includes('/') || shard.includes('\\')) continue; // refused by the checkpoint reader
    if (!fs.existsSync(path.join(dir, shard)))
      throw new FormatError(
        label,
        `the snapshot is incomplete: ${shard}, named by model.safetensors.index.json, is missing (finish the download)`,
      );
  }
}

/**
 * The origin of a folder that is a snapshot of the cache (`<cache>/models--org--name/snapshots/<commit>`,
 * resolved with its symlinks followed, inside the cache folder of `env`: {@link inHubCacheFolder}),
 * with the ref that points at it when one does (`main` first); undefined for any other folder.
 */
export function hubOriginOf(dir: string, env: NodeJS.ProcessEnv = process.env): HubOrigin | undefined {
  const abs = path.resolve(dir);
  const asked = resolved.get(abs);
  if (asked) return asked;
  if (!inHubCacheFolder(abs, env)) return undefined;
  const shape = snapshotShape(realOf(abs));
  if (!shape) return undefined;
  const { repo, commit } = shape;
  let revision = commit;
  try {
    const refs = fs.readdirSync(path.join(repo, 'refs'));
    const hit = ['main', ...refs.filter((r) => r !== 'main').sort()].find((r) => readRefQuiet(repo, r) === commit);
    if (hit) revision = hit;
  } catch {
    /* no refs: the commit names itself */
  }
  return { id: shape.id, revision, commit, dir: abs };
}

/** The names of a folder laid out as `…/models--org--name/snapshots/<commit>`, wherever it is. */
function snapshotShape(abs: string): { id: string; repo: string; commit: string } | undefined {
  const commit = path.basename(abs);
  const snapshots = path.dirname(abs);
  const repo = path.dirname(snapshots);
  const m = /^models--(.+?)--(.+)$/.exec(path.basename(repo));
  if (!COMMIT.test(commit) || path.basename(snapshots) !== 'snapshots' || !m) return undefined;
  return { id: `${m[1]}/${m[2]}`, repo, commit };
}

/**
 * For an origin recorded by an earlier run: the commit its ref points at now, when the ref
 * moved (a later download of the model); undefined when it did not, or the revision is a hash.
 */
export function movedRef(origin: Pick<HubOrigin, 'revision' | 'commit' | 'dir'>, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (COMMIT.test(origin.revision)) return undefined;
  // The origin comes from a manifest or a report, files a repository can ship: its `dir` is
  // believed only when it is a snapshot inside the cache folder.
  if (!hubOriginOf(origin.dir, env)) return undefined;
  const repo = path.dirname(path.dirname(realOf(origin.dir)));
  const now = readRefQuiet(repo, origin.revision);
  return now && now !== origin.commit ? now : undefined;
}

/** True when `p` lies inside a Hugging Face hub cache (an `models--*` repo folder under it, or the cache of `env`). */
export function insideHubCache(p: string, env: NodeJS.ProcessEnv = process.env): boolean {
  const abs = path.resolve(p);
  const cache = hubCacheDir(env);
  if (abs === cache || abs.startsWith(cache + path.sep)) return true;
  return abs.split(path.sep).some((part, i, all) => part.startsWith('models--') && (all[i + 1] === 'snapshots' || all[i + 1] === 'blobs'));
}

/**
 * Where outputs named after a model folder go (`<parent>/<name>-prepared-…`): beside the folder,
 * except for a cache snapshot, whose outputs go to {@link weightSpecHome} as `<org>--<name>-<commit8>`
 * — never into the cache. A folder only laid out like a snapshot elsewhere (a copied cache, or a
 * repository's `models--evil--x/snapshots/<hex>`) is no snapshot: its outputs go beside its
 * `models--…` folder, under the same name, never into that layout nor into weight-spec's home.
 */
export function modelHome(dir: string, env: NodeJS.ProcessEnv = process.env): { parent: string; name: string } {
  const abs = path.resolve(dir);
  const o = hubOriginOf(abs, env);
  if (o) return { parent: weightSpecHome(env), name: `${o.id.replace('/', '--')}-${o.commit.slice(0, 8)}` };
  const shape = snapshotShape(abs);
  if (shape) return { parent: path.dirname(shape.repo), name: `${shape.id.replace('/', '--')}-${shape.commit.slice(0, 8)}` };
  return { parent: path.dirname(abs), name: path.basename(abs) };
}

/** The `hub` field a report or manifest records for a source folder: `{}` unless it is a cache snapshot. */
export function hubRecord(dir: string): { hub?: { id: string; revision: string; commit: string } } {
  const o = hubOriginOf(dir);
  return o ? { hub: { id: o.id, revision: o.revision, commit: o.commit } } : {};
}

/** How a command line names a model folder: `org/name@<commit>` for a cache snapshot (the same snapshot, wherever it is run), else the path. */
export function modelArg(dir: string): string {
  const o = hubOriginOf(dir);
  return o ? `${o.id}@${o.commit}` : dir;
}

/**
 * How to show a file of the Hugging Face cache to a person: `org/name@revision (commit 1234567890ab)`
 * for a file of a snapshot or a blob of the repo, instead of the blob's hash path; undefined elsewhere.
 */
export function hubLabelOf(file: string): string | undefined {
  const abs = path.resolve(file);
  const snap = hubOriginOf(path.dirname(abs));
  if (snap) return `${snap.id}@${snap.revision}${snap.revision === snap.commit ? '' : ` (commit ${snap.commit.slice(0, 12)})`}`;
  const m = /^models--(.+?)--(.+)$/.exec(path.basename(path.dirname(path.dirname(abs))));
  if (m && path.basename(path.dirname(abs)) === 'blobs' && inHubCacheFolder(abs))
    return `${m[1]}/${m[2]} (a blob of the Hugging Face cache)`;
  return undefined;
}
