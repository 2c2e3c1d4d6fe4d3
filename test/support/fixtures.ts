/**
 * Locates the shared, read-only fixtures. Tests that need them call `fixturesDir()` via
 * `describeFixtures`: where the folder is absent (a user's fresh clone) those tests are
 * skipped with a printed notice; under CI=true its absence is a failure.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe } from 'vitest';

const repoRoot = path.resolve(__dirname, '..', '..');

/** Absolute path of the fixtures folder (WEIGHT_SPEC_FIXTURES overrides the default). */
export function fixturesDir(): string {
  return path.resolve(process.env.WEIGHT_SPEC_FIXTURES ?? path.join(repoRoot, '..', 'shared', 'fixtures'));
}

/** Absolute path of `../shared/configs` (full-size configs for benchmarks). */
export function configsDir(): string {
  return path.join(path.dirname(fixturesDir()), 'configs');
}

/** True when the fixtures exist. Under CI=true a missing folder throws. */
export function haveFixtures(): boolean {
  const ok = existsSync(path.join(fixturesDir(), 'llama', 'config.json'));
  if (!ok && process.env.CI === 'true') {
    throw new Error(`fixtures missing at ${fixturesDir()} (CI=true requires them; set WEIGHT_SPEC_FIXTURES)`);
  }
  return ok;
}

let noticed = false;
/** `describe` that runs only when the fixtures exist, printing a notice once otherwise. */
export function describeFixtures(name: string, fn: () => void): void {
  if (haveFixtures()) {
    describe(name, fn);
  } else {
    if (!noticed) {
      noticed = true;
      console.warn(`[weight-spec] fixtures not found at ${fixturesDir()}: fixture tests skipped`);
    }
    describe.skip(name, fn);
  }
}

/**
 * Families whose fixture ships a legacy.onnx and reference.json and that the pipeline
 * reproduces (export --config and export --onnx); the suites iterate these. A family leaves
 * {@link PENDING_FIXTURES} and joins this list in the change that builds it.
 */
export const LEGACY_FAMILIES = [
  'llama',
  'qwen2',
  'phi3',
  'mixtral',
  'gpt2',
  'gemma2',
  'codegen',
  'glm4_moe',
  'gpt_oss_full',
  'phi',
  'starcoder2',
  'mpt',
  'gemma3',
  'deepseek_v3',
  'grok1',
  'llama4',
  'qwen3_5_moe',
] as const;

/**
 * max |Δlogit| allowed for a float16 graph against a fixture's fp32 reference. 2e-2, except
 * gemma2, whose fixture drives q/k to |x| ≈ 13 and the residual stream to ≈ 16: a float16
 * forward rounded where HF's would be (an independent numpy emulation of modeling_gemma2.py,
 * core/test/graph/gemma2-float16-bound.test.ts) is itself ≈ 0.065 off reference.json; and grok1,
 * whose float16 emulation (core/test/graph/grok1-float16-bound.test.ts) is ≈ 0.021 off.
 */
export function float16Tolerance(family: string): number {
  return family === 'gemma2' ? 8e-2 : family === 'grok1' ? 3e-2 : 2e-2;
}

/** Every model folder of the shared fixtures (tests that cover "every folder" pin this list). */
export const FIXTURE_FOLDERS = [
  'codegen',
  'deepseek_v3',
  'gemma2',
  'gemma3',
  'gemma3_vlm',
  'glm4_moe',
  'gpt2',
  'gpt_oss',
  'gpt_oss_full',
  'grok1',
  'llama',
  'llama4',
  'mixtral',
  'mpt',
  'phi',
  'phi3',
  'qwen2',
  'qwen2_5_vl',
  'qwen3_5_moe',
  'qwen3_vl_moe',
  'starcoder2',
  'bert',
  'whisper',
  'llama_gptq',
  'llama_lora',
  'llava',
  'llava_next',
  'mistral3',
  'internvl',
  'llama4_vlm',
] as const;

/**
 * Fixture folders that are not one checkpoint with a single `legacy.onnx`: gpt_oss (a checkpoint
 * and its expected dequant), bert (`model.legacy.onnx`), whisper (encoder/decoder graphs),
 * llama_gptq (a quantized checkpoint) and llama_lora (PEFT adapters for `../llama`).
 */
export const NO_LEGACY_ONNX = ['gpt_oss', 'bert', 'whisper', 'llama_gptq', 'llama_lora'] as const;

/** Folders that are not a model checkpoint themselves (llama_lora holds adapters for `../llama`). */
export const NOT_CHECKPOINTS = ['llama_lora'] as const;

/**
 * A pipeline path a fixture goes through: `export --config`, `export --onnx` of its legacy
 * graph, `vlm` (export --config writes the vision graph and `vlm.json`, not the text graph
 * alone) or `lora` (`export --config <base> --lora <adapter>`).
 */
export type FixturePath = 'config' | 'onnx' | 'vlm' | 'lora';

/**
 * The one place that names fixture families not built yet: folder → the issue that builds it
 * and the paths that do not work today. `core/test/architecture/fixture-coverage.test.ts` reads it: every
 * folder is built or pending, each pending path is shown to still fail (a family that starts
 * working must leave this list), and the pending families are printed on every run — never
 * skipped silently.
 */
export const PENDING_FIXTURES: Readonly<Record<string, { issue: number; paths: readonly FixturePath[] }>> = {
  llama4_vlm: { issue: 44, paths: ['vlm'] },
};

/** True when `folder`'s `path` is built (not named in {@link PENDING_FIXTURES}). */
export function fixtureBuilt(folder: string, p: FixturePath): boolean {
  return !(PENDING_FIXTURES[folder]?.paths ?? []).includes(p);
}

/**
 * True when `folder` is a text model whose `export --config` is built: not a VLM folder (their
 * references hold an image, judged by the VLM suites), not speech or an embedding encoder (judged
 * by their own suites), and not pending for `config`. Suites that
 * walk the fixture folders for text models ask this.
 */
export function builtTextFixture(folder: string): boolean {
  return (
    fixtureBuilt(folder, 'config') &&
    !(VLM_FOLDERS as readonly string[]).includes(folder) &&
    !(BUILT_SPEECH as readonly string[]).includes(folder) &&
    !(BUILT_EMBEDDINGS as readonly string[]).includes(folder)
  );
}

/**
 * The speech fixtures the pipeline builds (Whisper: export --config writes an encoder and a
 * decoder graph; its legacy encoder/decoder graphs through export --onnx), judged by their own
 * suites (core/test/whisper/) from the WAV file, not by the text-model suites.
 */
export const BUILT_SPEECH = ['whisper'] as const;

/** The VLM fixture folders (`vision.legacy.onnx` + `decoder.legacy.onnx`). */
export const VLM_FOLDERS = [
  'qwen2_5_vl',
  'gemma3_vlm',
  'qwen3_vl_moe',
  'llava',
  'llava_next',
  'mistral3',
  'internvl',
  'llama4_vlm',
] as const;

/**
 * Fixture folders holding a single `legacy.onnx`: every folder but the VLMs (which ship
 * vision/decoder legacy graphs instead) and {@link NO_LEGACY_ONNX}.
 * core/test/architecture/fixture-coverage.test.ts checks this against the folders on disk.
 */
export const LEGACY_ONNX_FOLDERS = FIXTURE_FOLDERS.filter(
  (f): f is Exclude<(typeof FIXTURE_FOLDERS)[number], (typeof VLM_FOLDERS)[number] | (typeof NO_LEGACY_ONNX)[number]> =>
    !(NO_LEGACY_ONNX as readonly string[]).includes(f) && !(VLM_FOLDERS as readonly string[]).includes(f),
);

/**
 * The VLM fixtures the pipeline builds (export --config and both legacy graphs), each judged by
 * its own suites (core/test/vlm/vlm-*.test.ts) rather than the text-model suites over LEGACY_FAMILIES.
 */
export const BUILT_VLMS = ['qwen3_vl_moe', 'qwen2_5_vl', 'gemma3_vlm', 'llava', 'llava_next', 'mistral3', 'internvl'] as const;

/**
 * The LoRA fixtures the pipeline builds (`export --config <base> --lora <adapter> …` → prepare
 * --lora → compile → run --lora-id / --lora-ids), judged by core/test/export/lora-e2e.test.ts
 * against their reference.json (base, each adapter, a batch with an adapter per row).
 */
export const BUILT_LORA = ['llama_lora'] as const;

/** What a LoRA fixture's reference.json holds (`tools/fixtures/gen_quant_lora.py`). */
export interface LoraFixtureRef {
  base_fixture: string;
  adapters: Record<string, { path: string; r: number; lora_alpha: number; scaling: number; target_modules: string[]; lora_id: number }>;
  input_ids: number[];
  cases: Record<string, { adapter: string | null; generated_ids: number[]; logits: number[][] }>;
  batch: { adapters: string[]; lora_ids: number[][]; input_ids: number[][]; generated_ids: number[][]; logits: number[][][] };
}

/**
 * Quantized checkpoints the pipeline builds (no legacy graph): judged by their reference logits in
 * core/test/quantization/gptq-fixture.test.ts (dequantized and kept, compile → run) and, dequantized,
 * by the suites walking the text fixtures (builtTextFixture).
 */
export const BUILT_QUANTIZED = ['llama_gptq'] as const;

/**
 * The embedding fixtures the pipeline builds (export --config with the sentence-transformers
 * pooling, and the legacy `model.legacy.onnx` through export --onnx), judged by their own suite
 * (core/test/embedding/bert-fixture.test.ts: every sentence's unpadded last_hidden_state rows and
 * sentence_embedding) rather than the causal-LM suites over LEGACY_FAMILIES.
 */
export const BUILT_EMBEDDINGS = ['bert'] as const;

/** Repository root (for spawning the built CLI). */
export const REPO_ROOT = repoRoot;

/** What a text fixture's reference.json holds: the prompt, the generated tokens and the logit rows. */
export interface FixtureRef {
  input_ids: number[];
  generated_ids: number[];
  logits: number[][];
}
