/**
 * The human-facing model lists, generated from the registries (issue #49): the README's model
 * table and docs/MODULES.md's family list. `core/test/architecture/docs-models.test.ts` checks
 * that both files hold exactly this text between their markers; `npm run docs:models` writes it.
 * A new family row (families/registry.ts, vlm/config.ts) changes them without a hand edit.
 */
import { FAMILIES } from '../../core/src/export/families/registry';
import type { FamilyRow } from '../../core/src/export/families/row';
import { OTHER_VLMS, VLM_MODEL_TYPES, VLM_PROCESSORS } from '../../core/src/export/vlm/config';
import { EMBEDDING_HF_CLASSES, EMBEDDING_MODEL_TYPES } from '../../core/src/export/embedding/encoder-config';
import { WHISPER_MODEL_TYPE } from '../../core/src/export/whisper/whisper-config';

/** The markers a generated section stands between. */
export const MARKERS = {
  readme: ['<!-- model-table:begin (generated: npm run docs:models) -->', '<!-- model-table:end -->'],
  modules: ['<!-- family-list:begin (generated: npm run docs:models) -->', '<!-- family-list:end -->'],
} as const;

const code = (s: string) => `\`${s}\``;

/** What a decoder family's graph holds, in a few words. */
function kindOf(f: FamilyRow): string {
  const parts = [f.moe === 'none' ? 'dense' : `MoE (${f.moe} routing)`];
  if (f.mla) parts.push('MLA (`--mla-cache`)');
  if (f.slidingCache) parts.push('sliding layers (`--sliding-cache`)');
  return parts.join(', ');
}

/** How a family is judged: its fixture's reference logits, and/or code-made configs against a reference forward. */
function judgedBy(f: FamilyRow): string {
  const out: string[] = [];
  if (f.test.fixture) out.push(`fixture ${code(f.test.fixture)}`);
  const n = Object.keys(f.test.configs ?? {}).length;
  if (n > 0) out.push(`${n} code-made config${n > 1 ? 's' : ''}`);
  return out.join(' + ') || '—';
}

/** The README's model table. */
export function readmeModelTable(): string {
  const rows = [
    '| `model_type` | Hugging Face class | graph | judged by |',
    '| --- | --- | --- | --- |',
    ...FAMILIES.map(
      (f) => `| ${[f.modelType, ...(f.aliases ?? [])].map(code).join(', ')} | ${code(f.hfClass)} | ${kindOf(f)} | ${judgedBy(f)} |`,
    ),
  ];
  const vlm = [
    '',
    'Vision-language models (`export --config` writes `vision/`, `language/` and `vlm.json`; `run --image` runs the processor):',
    '',
    '| `model_type` | image processor |',
    '| --- | --- |',
    ...VLM_MODEL_TYPES.map((t) => `| ${code(t)} | ${VLM_PROCESSORS[t]} |`),
    '',
    `Refused by name (one line, exit 1): ${OTHER_VLMS.map(code).join(', ')}.`,
    '',
    'Next VLMs, not built yet: Gemma 4, Kimi-K2.5, Mllama and Molmo are refused with one line naming their `model_type`; Qwen3.5-VL (`qwen3_5_moe` with `text_config`) exports its text model, the `model.visual.*` tensors left out.',
    '',
    `Embedding encoders (one graph; the folder's sentence-transformers pooling as \`sentence_embedding\`; \`run --dump-embeddings\`): ${EMBEDDING_MODEL_TYPES.map((t) => `${code(t)} (${code(EMBEDDING_HF_CLASSES[t])})`).join(', ')}.`,
    '',
    `Speech: ${code(WHISPER_MODEL_TYPE)} (\`WhisperForConditionalGeneration\`: an encoder graph and a decoder graph with self- and cross-attention caches; \`run --audio file.wav\` with the log-mel extractor ported to TypeScript).`,
  ];
  return [...rows, ...vlm].join('\n');
}

/** docs/MODULES.md's family list: one line per registry row. */
export function modulesFamilyList(): string {
  return FAMILIES.map((f) => `- ${code(f.modelType)}: ${kindOf(f)}; ${judgedBy(f)}`).join('\n');
}

/** `text` with the section between `markers` replaced by `body` (throws when a marker is missing). */
export function withSection(text: string, markers: readonly [string, string], body: string): string {
  const a = text.indexOf(markers[0]);
  const b = text.indexOf(markers[1]);
  if (a < 0 || b < a) throw new Error(`markers ${markers[0]} … ${markers[1]} not found`);
  return `${text.slice(0, a + markers[0].length)}\n${body}\n${text.slice(b)}`;
}
