/**
 * What every VLM family's qaic specializations share, below the families and the dispatcher
 * (qaic-vlm-specs.ts imports the family files, so the family files take these from here, not
 * from it): the specialization's shape, the compile sizes a square-image family reads, the
 * language entries' batch rule as it is handed in, and the two refusals QEfficient's families
 * make alike — a square-image family given `--img-height`/`--img-width`, and image rows that
 * leave no room in ctx_len (`vision_size < ctx_len`, asserted in each family's
 * `get_specializations` in quic/efficient-transformers main ebf55e8159c8b87bff6d8028541b824244b16c81).
 */
import { UsageError } from '../errors';

/** A specialization as QEfficient's dict holds it: `[symbol, value]`, the value an int or (a decode seq_len) a string. */
export type VlmSpecialization = [string, number | string][];

/** One family's entries: the vision graph's and the language graph's (prefill, then decode). */
export interface VlmSpecializations {
  vision: VlmSpecialization[];
  lang: VlmSpecialization[];
}

/** The compile sizes a family reads (flags, else QEfficient's defaults); a subset of qaic-vlm-specs.ts VlmSizes. */
export interface VlmImageSizes {
  batchSize: number;
  prefillSeqLen: number;
  ctxLen: number;
  /** Qwen and LLaVA-NeXT: `--img-height`/`--img-width`. */
  height?: number;
  width?: number;
  /** Square-image families: `--img-size` (QEfficient's img_size). */
  imgSize?: number;
}

/** The language entries' batch keys (qaic-vlm-specs.ts's continuous-batching rule), passed in to keep one definition. */
export type LangBatch = (decode: boolean) => VlmSpecialization;

/** Refuses `--img-height`/`--img-width` for a family compiled at one square `img_size` (`a LLaVA`, `a Gemma 3`, …). */
export function refuseImageSides(s: VlmImageSizes, aFamily: string): void {
  if (s.height !== undefined || s.width !== undefined)
    throw new UsageError(`compile: ${aFamily} export takes --img-size (QEfficient's img_size), not --img-height/--img-width`);
}

/** Refuses image rows that fill ctx_len: `whatGives` says what makes them ("an image gives", "13 tiles give"); `hint` ends the line. */
export function requireVisionBelowCtx(visionSize: number, ctxLen: number, whatGives: string, hint = ''): void {
  if (visionSize >= ctxLen)
    throw new UsageError(
      `compile: ${whatGives} vision_size ${visionSize}, which must be less than ctx_len ${ctxLen} (QEfficient's rule)${hint}`,
    );
}
