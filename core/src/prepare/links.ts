/**
 * "No copy when nothing changes": a dense task whose output is its source shard byte for
 * byte (`Task.link`, decided by the planner) is linked into the prepared directory instead
 * of written — a hard link where the filesystem allows, else a relative symlink, never a
 * copy. QEfficient reuses the source checkpoint in that case too
 * (`QEfficient/base/checkpoint_transforms.py`, quic/efficient-transformers). The source is
 * checked against the plan first (headers only), as a written task checks its reads; a later
 * edit of the source is caught by the manifest's source sizes and mtimes (stale).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { PipelineError } from '../errors';
import { readSafetensorsHeader } from '../formats/safetensors';
import { tempPathFor } from '../paths';
import type { Task, TaskStats } from './types';

/** errno codes for which a hard link is impossible here but a symlink may work. */
const NO_HARD_LINK = new Set(['EXDEV', 'EPERM', 'EMLINK', 'ENOTSUP', 'EOPNOTSUPP', 'EACCES']);

/** Links `task.link` to `<outDir>/<task.file>`; `outDir` is a sibling of the final directory, so a relative symlink stays valid after the rename. */
export async function linkTask(task: Task, outDir: string): Promise<TaskStats> {
  const started = Date.now();
  const src = task.link!;
  const h = await readSafetensorsHeader(src);
  const changed =
    h.tensors.size !== task.tensors.length ||
    Object.values(task.sources).some((t) => {
      const info = h.tensors.get(t.key);
      return (
        !info ||
        info.dtype !== t.dtype ||
        info.dataOffset !== t.offset ||
        info.byteLength !== t.byteLength ||
        info.shape.join() !== t.shape.join()
      );
    });
  if (changed) throw new PipelineError(`${src}: changed since planning (task ${task.id}); nothing was written — re-run prepare`);
  const dst = path.join(outDir, task.file);
  // Linked under a unique name, then renamed: a shard run again (or twice at once) replaces
  // the link with the same one instead of failing on the existing name.
  const tmp = tempPathFor(dst);
  let linked: 'hardlink' | 'symlink' = 'hardlink';
  try {
    try {
      await fs.link(src, tmp);
    } catch (e) {
      if (!NO_HARD_LINK.has((e as NodeJS.ErrnoException).code ?? '')) throw e;
      linked = 'symlink';
      await fs.symlink(path.relative(outDir, src), tmp);
    }
    await fs.rename(tmp, dst);
  } catch (e) {
    await fs.rm(tmp, { force: true });
    throw e;
  }
  const stages: Record<string, string[]> = {};
  for (const t of task.tensors) stages[t.key] = [...t.stages.slice(0, -1), 'linked', 'final'];
  return { readBytes: {}, writtenBytes: {}, stages, ms: Date.now() - started, linked };
}
