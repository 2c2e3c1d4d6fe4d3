/**
 * What `run` feeds a LoRA graph's `lora_ids` input (QEfficient's finite adapters,
 * `QEffAutoLoraModelForCausalLM`): the adapter of each batch row, `[batch, 1]` int64, 0 for the
 * base model. QEfficient's host feeds `prompt_to_lora_id_mapping` per row the same way
 * (`QEfficient/generation/text_generation_inference.py`, quic/efficient-transformers
 * ebf55e8159c8b87bff6d8028541b824244b16c81). The graph's metadata says how many adapters it
 * stacks, so an id past them is refused before ONNX Runtime's Gather sees it.
 */
import { PipelineError } from '../errors';
import { loraAdapters } from '../artifacts/graph-metadata';

/** How many adapters the graph's metadata names (ids 1…n), if it names them. */
export function loraAdapterCount(metadata: readonly { key: string; value: string }[]): number | undefined {
  return loraAdapters(metadata)?.length;
}

/**
 * Checks the ids against the graph: a graph without `lora_ids` takes none but 0 (the base), a
 * LoRA graph's ids are 0…n. Returns the ids to feed (0 per row when none are given).
 */
export function checkLoraIds(
  ids: readonly number[] | undefined,
  rows: number,
  hasInput: boolean,
  count: number | undefined,
  model: string,
): number[] {
  if (ids !== undefined && ids.length !== rows)
    throw new PipelineError(`${ids.length} LoRA id(s) for ${rows} input row(s): give one id per row`);
  const got = ids ? [...ids] : Array<number>(rows).fill(0);
  if (!hasInput) {
    if (got.some((k) => k !== 0))
      throw new PipelineError(`${model}: the graph has no lora_ids input (export it with --lora <adapter dir> to serve adapters)`);
    return got;
  }
  const bad = got.find((k) => !Number.isInteger(k) || k < 0 || (count !== undefined && k > count));
  if (bad !== undefined)
    throw new PipelineError(
      `LoRA id ${bad} is not served by ${model}: ids are 0 (base)${count !== undefined ? ` … ${count} (its adapters)` : ' or an adapter'}`,
    );
  return got;
}

/**
 * The ids to feed a call of `rows` rows: those given, else `loraId` on every row (else 0),
 * checked against the graph `model` (whether it has the input, how many adapters its metadata names).
 */
export function loraIdsOf(
  model: string,
  hasInput: boolean,
  metadata: readonly { key: string; value: string }[],
  loraId: number | undefined,
): (rows: number, given?: number[]) => number[] {
  const count = loraAdapterCount(metadata);
  return (rows, given) =>
    checkLoraIds(given ?? (loraId !== undefined ? Array<number>(rows).fill(loraId) : undefined), rows, hasInput, count, model);
}
