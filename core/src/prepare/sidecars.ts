/**
 * Files copied beside the prepared shards so the prepared directory is a complete HF model
 * folder: config, generation config, tokenizer files, chat template.
 */
import fs from 'node:fs/promises';

const EXACT = new Set(['config.json', 'generation_config.json', 'special_tokens_map.json', 'chat_template.jinja', 'chat_template.json', 'vocab.json', 'merges.txt', 'added_tokens.json']);

/** True for a sidecar file name (`tokenizer*` included). */
export function isSidecar(name: string): boolean {
  return EXACT.has(name) || name.startsWith('tokenizer');
}

/** Sidecar files present (regular files only) in `dir`, sorted. */
export async function sidecarNames(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await fs.readdir(dir, { withFileTypes: true })) {
    if (e.isFile() && isSidecar(e.name)) out.push(e.name);
  }
  return out.sort();
}
