/**
 * Links from checkpoint keys to the spec inputs that read them. A spec input uses a tensor
 * when its `files[location.file]` resolves (relative to the spec's folder, following links
 * as QEfficient's symlinked prepared folder needs) to a shard of the checkpoint and that shard
 * holds `location.key`.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Checkpoint } from '../formats/safetensors';
import { parseSpecText } from '../spec';
import type { InputSource } from '../spec/types';
import type { SpecLink } from './types';

/** A spec file and its current text. */
export interface SpecText {
  file: string;
  text: string;
}

function real(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/** For each key of `ck`: the inputs of `specs` that use it; and which specs reference `ck` at all. */
export function linkSpecs(ck: Checkpoint, specs: readonly SpecText[]): { links: Record<string, SpecLink[]>; specs: string[] } {
  const links: Record<string, SpecLink[]> = Object.create(null);
  const linked: string[] = [];
  if (specs.length === 0) return { links, specs: linked };
  const shards = new Map(ck.files.map((f) => [real(f), f]));
  for (const s of specs) {
    const parsed = parseSpecText(s.text, s.file);
    const spec = parsed.spec;
    if (!spec) continue;
    const base = path.dirname(s.file);
    // files[i] → the shard of this checkpoint it names (undefined: another checkpoint).
    const shardOf = spec.files.map((f) => shards.get(real(path.resolve(base, f.path))));
    if (!shardOf.some((x) => x !== undefined)) continue;
    linked.push(s.file);
    spec.inputs.forEach((input, i) => {
      const shard = shardOf[input.location.file];
      if (shard === undefined || ck.fileOf(input.location.key) !== shard) return;
      const node = parsed.sources?.inputs.at(i)?.node;
      const link: SpecLink = { spec: s.file, input: typeof node?.[1] === 'number' ? node[1] : i, name: input.name };
      (links[input.location.key] ??= []).push(link);
    });
  }
  return { links, specs: linked };
}

/**
 * The text range of `inputs[input]`'s key in spec `text` (the source document's index, as a
 * {@link SpecLink} names it), for revealing it when a link is followed; undefined when the
 * text no longer has that input.
 */
export function specInputKeyRange(text: string, file: string, input: number): { start: number; end: number } | undefined {
  const parsed = parseSpecText(text, file);
  const all = parsed.sources?.inputs;
  let src: InputSource | undefined;
  for (let i = 0; all && i < all.length && !src; i++) if (all.at(i)!.node[1] === input) src = all.at(i);
  const range = parsed.offsets.value(src?.key ?? ['inputs', input]);
  return range ? { start: range.start, end: range.end } : undefined;
}
