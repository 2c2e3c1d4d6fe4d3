/**
 * config.json → {@link ArchSpec}: the family registry (`families/registry.ts`) names the family,
 * its row's builder parses the config. Each family's mapping lives in its own `families/<name>.ts`.
 */
import type { ArchSpec } from '../blocks/arch';
import { UsageError } from '../../errors';
import { checkExpertParallel } from './config';
import { familyOf } from './registry';
import type { ArchOptions } from './row';
import { slidingCacheRefused, windowCacheArch } from '../blocks/attention-window';

export type { ArchOptions } from './row';

/** Parses a config.json object into the architecture the graph builder consumes. */
export function archFromConfig(raw: unknown, file: string, opts: ArchOptions = {}): ArchSpec {
  const row = familyOf(raw, file);
  // a dense family has no experts to split: refused before anything else is read
  if (opts.expertParallel && row.moe === 'none') checkExpertParallel(file, undefined, opts.expertParallel.stages);
  if (opts.mlaCache !== undefined && !row.mla)
    throw new UsageError(`${file}: --mla-cache goes with a Multi-head Latent Attention model (deepseek_v3, kimi_k2), not ${row.modelType}`);
  if (opts.slidingCache !== undefined && !row.slidingCache) throw slidingCacheRefused(file, row.modelType);
  const a = row.build(raw, file, opts);
  return opts.slidingCache === 'window' ? windowCacheArch(a, file) : a;
}
