/**
 * A batch of different rows through a KV graph (`run --input-ids 'a;b' --lora-ids 1,2`): the
 * rows are fed together, one call per position for the logits dump and a prefill + one call per
 * token for greedy decoding, each call with every row's ids and its LoRA adapter
 * (QEfficient's mixed-adapter batch, `prompt_to_lora_id_mapping`). The runner provides the one
 * step that feeds a call (runner.ts); this is only the order of the calls.
 */
import { PipelineError } from '../errors';
/** Refuses a batch the graph cannot run: a sampler graph, rows of unequal length, a row count its fixed batch does not take. */
export function checkRows(
  rows: number[][],
  g: { model: string; sampler: boolean; batch: number | undefined; checkIds: (row: number[]) => void },
): void {
  if (g.sampler)
    throw new PipelineError(`${g.model}: a batch of rows runs greedy on a plain graph; this one ends in the on-device sampler`);
  if (rows.length === 0 || rows.some((r) => r.length !== rows[0]!.length || r.length === 0))
    throw new PipelineError('the batch rows must be non-empty and of equal length (no padding yet)');
  if (g.batch !== undefined && rows.length !== g.batch)
    throw new PipelineError(`${g.model}: the graph's batch is fixed at ${g.batch}; give ${g.batch} rows (${rows.length} given)`);
  for (const r of rows) g.checkIds(r);
}

/** One call over every row: the rows' tokens at positions start…, their adapters; each row's last logits. */
export type RowsStep<K> = (
  kv: K,
  rows: number[][],
  start: number,
  phase: 'prefill' | 'decode',
  loraIds: number[],
) => Promise<Float32Array[]>;

/** The batch methods over the runner's step, fresh state and row checks. */
export function batchMethods<K>(o: {
  newState: (need: number, rows: number) => K;
  step: RowsStep<K>;
  /** Refuses rows or ids the graph cannot take; returns the ids to feed. */
  check: (rows: number[][], loraIds?: number[]) => number[];
  /** The greedy pick of a logits row (the runner's argmax). */
  argmax: (row: Float32Array) => number;
}): {
  logits: (rows: number[][], loraIds?: number[]) => Promise<number[][][]>;
  generate: (rows: number[][], n: number, loraIds?: number[]) => Promise<number[][]>;
} {
  return {
    logits: async (rows, loraIds) => {
      const lora = o.check(rows, loraIds);
      const kv = o.newState(rows[0]!.length, rows.length);
      const out: number[][][] = rows.map(() => []);
      for (let t = 0; t < rows[0]!.length; t++) {
        const last = await o.step(
          kv,
          rows.map((x) => [x[t]!]),
          t,
          'prefill',
          lora,
        );
        last.forEach((row, b) => out[b]!.push(Array.from(row)));
      }
      return out;
    },
    generate: async (rows, n, loraIds) => {
      const lora = o.check(rows, loraIds);
      const kv = o.newState(rows[0]!.length + n, rows.length);
      const out: number[][] = rows.map(() => []);
      let last = await o.step(kv, rows, 0, 'prefill', lora);
      for (let k = 0; k < n; k++) {
        const next = last.map(o.argmax);
        next.forEach((t, b) => out[b]!.push(t));
        if (k + 1 < n)
          last = await o.step(
            kv,
            next.map((t) => [t]),
            rows[0]!.length + k,
            'decode',
            lora,
          );
      }
      return out;
    },
  };
}
