/**
 * One row of the family registry (`families/registry.ts`): everything the tool knows about a
 * model family, stated once in the family's own `families/<name>.ts`. Like vLLM's model registry
 * (`vllm/model_executor/models/registry.py`), one row per architecture; unlike it, the row also
 * carries the config → {@link ArchSpec} builder and the family's small test config, so adding a
 * dense family is one file plus its test (docs/ARCHITECTURE.md, "Adding a family").
 *
 * This file holds types only (and no family), so family files and the registry both import it
 * without an import cycle.
 */
import type { ArchSpec, MoeSpec } from '../blocks/arch';

/** Options that depend on the checkpoint or the export flags rather than the config. */
export interface ArchOptions {
  /** Keys the (prepared) checkpoint has; used where HF checkpoints differ (GPT-2's prefix). */
  keys?: ReadonlySet<string>;
  /** Expert-parallel packed MoE layout (QEfficient's `moe_prefill_flavour=expert_parallel`): P pipeline stages. */
  expertParallel?: { stages: number };
  /** Multi-head Latent Attention families: the KV cache form, per head (default) or compressed (`--mla-cache compressed`). */
  mlaCache?: 'per-head' | 'compressed';
  /** `--sliding-cache`: sliding layers' KV cache, ctx_len long (`full`, default) or a `sliding_window` ring (`window`). */
  slidingCache?: 'full' | 'window';
}

/** A small config.json object (real HF field names). */
export type TestConfig = Record<string, unknown>;

/**
 * How a family's MoE routes tokens (`none`: dense). The values are {@link MoeSpec}'s `routing`
 * kinds: `softmax` (Mixtral, Qwen3-MoE), `topk-softmax` (GPT-OSS, GraniteMoE), `sigmoid-group`
 * (GLM-4-MoE, DeepSeek-V3).
 */
export type MoeKind = 'none' | NonNullable<MoeSpec['routing']>;

/** One family of the registry. */
export interface FamilyRow {
  /** config.json `model_type` of the family (the row's key). */
  modelType: string;
  /** Other `model_type` values that mean this family (e.g. `kimi_k2` → deepseek_v3, `gemma3_text` → gemma3). */
  aliases?: readonly string[];
  /**
   * Hugging Face `architectures` class names that identify the family when config.json has no
   * `model_type` (Grok-1's configs: `Grok1ModelForCausalLM`); also matched case-sensitively, so
   * list each spelling (`MPTForCausalLM`, `MptForCausalLM`).
   */
  architectures?: readonly string[];
  /**
   * The HF causal-LM class (`LlamaForCausalLM`): the spec's `model_name` when config.json names
   * no `architectures` (QEfficient writes `self.model.__class__.__name__`).
   */
  hfClass: string;
  /** HF `base_model_prefix`: the module the trunk's keys live under (`transformer`; absent: `model`, as most families). */
  keyPrefix?: string;
  /** MoE routing kind; `none` for dense families (expert-parallel export is refused up front). */
  moe: MoeKind;
  /** Multi-head Latent Attention (DeepSeek-V3): `--mla-cache` chooses its cache form; refused for other families. */
  mla?: boolean;
  /** QEfficient gives this family's sliding layers a `sliding_window`-long cache: `--sliding-cache window` offers it; refused for other families. */
  slidingCache?: boolean;
  /** config.json → {@link ArchSpec}; refuses (config.ts `refuse`) what the graph does not implement. */
  build: (raw: unknown, file: string, opts: ArchOptions) => ArchSpec;
  /**
   * How the family is tested: a fixture folder of `../shared/fixtures` (with reference logits),
   * and/or small code-made configs (the tests' SYNTHETIC_CONFIGS, named `<name>` → config),
   * each judged by the graph tests against an independent reference forward.
   */
  test: { fixture?: string; configs?: Readonly<Record<string, TestConfig>> };
}
