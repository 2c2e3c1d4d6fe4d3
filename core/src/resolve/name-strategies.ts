/**
 * QEfficient's name-based key lookup (DESIGN.md, "QEfficient's key lookup"), kept in its
 * order, plus tied weights. Each strategy proposes a checkpoint key for an ONNX name; the
 * resolver then verifies the proposal by content, so a name that happens to match a key of
 * different content is never trusted blindly.
 */
import { keyPrefixOf } from '../export/families/registry';

/** How a mapping was found; recorded per input in export-report.json. */
export type Strategy =
  | 'exact'
  | 'strip-base-model'
  | 'add-prefix'
  | 'strip-prefix'
  | 'mlp-to-block-sparse-moe'
  | 'gate-router'
  | 'tied'
  | 'content'
  | 'content-transposed'
  | 'content-affine'
  /** One expert of a stacked tensor or a block of rows of a fused one (`Resolution.slice` says which). */
  | 'content-slice';

/** Names that may stay unresolved (rotary caches and scale constants are not weights). */
export const ALLOWED_UNRESOLVED = ['cos_cached', 'sin_cached', 'inv_freq', 'original_inv_freq', 'embed_positions', 'embed_scale'] as const;

/** True when the ONNX name ends in one of {@link ALLOWED_UNRESOLVED}. */
export function isAllowedUnresolved(name: string): boolean {
  const last = name.split('.').pop() ?? name;
  return (ALLOWED_UNRESOLVED as readonly string[]).includes(last);
}

/** The model's `base_model_prefix`, as Hugging Face defines it for its family. */
export function baseModelPrefix(config: Record<string, unknown> | undefined): string {
  // the family registry's key prefix (GPT-2-style trunks under `transformer`, Llama-style under `model`)
  return keyPrefixOf(config);
}

/** One proposal: a key the checkpoint holds, and the strategy that found it. */
export interface NameProposal {
  key: string;
  strategy: Strategy;
}

/**
 * Proposes checkpoint keys for `name` in QEfficient's order; only keys for which `has`
 * answers true are proposed. Several proposals can be returned (the resolver takes the
 * first whose content verifies).
 */
export function proposeByName(name: string, has: (key: string) => boolean, config?: Record<string, unknown>): NameProposal[] {
  const out: NameProposal[] = [];
  const push = (key: string, strategy: Strategy): void => {
    if (has(key) && !out.some((p) => p.key === key)) out.push({ key, strategy });
  };
  const prefix = baseModelPrefix(config) + '.';
  push(name, 'exact');
  const noBase = name.startsWith('base_model.') ? name.slice('base_model.'.length) : undefined;
  if (noBase !== undefined) push(noBase, 'strip-base-model');
  for (const n of noBase !== undefined ? [name, noBase] : [name]) {
    if (!n.startsWith(prefix)) push(prefix + n, 'add-prefix');
    if (n.startsWith(prefix)) push(n.slice(prefix.length), 'strip-prefix');
    if (n.includes('.mlp.')) push(n.replace('.mlp.', '.block_sparse_moe.'), 'mlp-to-block-sparse-moe');
    if (n.endsWith('.mlp.gate.weight')) push(n.replace(/\.mlp\.gate\.weight$/, '.mlp.router.weight'), 'gate-router');
    if (n.endsWith('.mlp.router.weight')) push(n.replace(/\.mlp\.router\.weight$/, '.mlp.gate.weight'), 'gate-router');
  }
  for (const key of tiedCandidates(name, config)) push(key, 'tied');
  return out;
}

/** The embedding keys a tied `lm_head.weight` may point at, most specific first. */
export function tiedCandidates(name: string, config?: Record<string, unknown>): string[] {
  const bare = name.replace(/^base_model\./, '');
  if (bare !== 'lm_head.weight') return [];
  // HF's PretrainedConfig ties by default (GPT-2's config has no such field); only an
  // explicit false rules tying out. The resolver verifies the content either way.
  if (config?.tie_word_embeddings === false) return [];
  return ['model.embed_tokens.weight', 'transformer.wte.weight', 'wte.weight', 'model.decoder.embed_tokens.weight'];
}
