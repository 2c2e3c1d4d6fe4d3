/**
 * Graph inputs and outputs folded into runs for the ONNX viewer's summary: the 96 KV-cache
 * inputs of a 48-layer model read as `past_key.{0..47}` and `past_value.{0..47}`, one row each,
 * instead of 96 rows ahead of everything else. Values fold when their names differ only in
 * the last number and they share dtype and shape.
 */
import type { ValueEntry } from './types';

/** One row: a single value, or a run of values named `prefix<i>suffix` for `i` in `from..to`. */
export interface ValueRun {
  /** `past_key.{0..47}` for a run, the name itself for a single value. */
  label: string;
  dtype: string;
  dims: (number | string)[];
  /** The values' names, in graph order. */
  names: string[];
}

const NUMBERED = /^(.*?)(\d+)(\D*)$/;

/** Folds `values` into runs (see the module comment); rows keep the order of their first value. */
export function valueRuns(values: ValueEntry[], minRun = 3): ValueRun[] {
  const groups = new Map<string, { items: { n: number; v: ValueEntry; at: number }[]; pre: string; suf: string }>();
  const singles: { first: number; run: ValueRun }[] = [];
  values.forEach((v, i) => {
    const m = NUMBERED.exec(v.name);
    if (!m) {
      singles.push({ first: i, run: { label: v.name, dtype: v.dtype, dims: v.dims, names: [v.name] } });
      return;
    }
    const key = JSON.stringify([m[1], m[3], v.dtype, v.dims]);
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { items: [], pre: m[1]!, suf: m[3]! }));
    g.items.push({ n: Number(m[2]), v, at: i });
  });
  const out: { first: number; run: ValueRun }[] = [...singles];
  for (const g of groups.values()) {
    // Contiguous stretches of numbers (layers with another shape split a run in two).
    const sorted = g.items.slice().sort((a, b) => a.n - b.n);
    let start = 0;
    for (let i = 1; i <= sorted.length; i++) {
      if (i < sorted.length && sorted[i]!.n === sorted[i - 1]!.n + 1) continue;
      const part = sorted.slice(start, i);
      if (part.length >= minRun) {
        const v = part[0]!.v;
        out.push({
          first: Math.min(...part.map((p) => p.at)),
          run: {
            label: `${g.pre}{${part[0]!.n}..${part[part.length - 1]!.n}}${g.suf}`,
            dtype: v.dtype,
            dims: v.dims,
            names: part.map((p) => p.v.name),
          },
        });
      } else {
        for (const p of part) out.push({ first: p.at, run: { label: p.v.name, dtype: p.v.dtype, dims: p.v.dims, names: [p.v.name] } });
      }
      start = i;
    }
  }
  return out.sort((a, b) => a.first - b.first).map((x) => x.run);
}
