/**
 * `export --keep-quantized`: the Linears whose prepared layout holds MatMulNBits parts
 * (`<m>.qweight` `[out, blocks, block/2]`, `<m>.scales`, `<m>.qzeros`, act-order `<m>.g_idx`; written
 * by `prepare --keep-quantized`, core/src/prepare/transforms/int4.ts) read them instead of a float
 * `<m>.weight`. The architecture is annotated, not rebuilt: objects off the changed paths keep their
 * identity (the rope tables are shared by identity).
 */
import type { ArchSpec, LinearSpec, NBitsSpec } from '../blocks/arch';

function isLinear(v: Record<string, unknown>): v is Record<string, unknown> & LinearSpec {
  return typeof v.weight === 'string' && typeof v.in === 'number' && typeof v.out === 'number';
}

/** The MatMulNBits inputs of `l` in the layout, when its module is kept packed. */
function nbitsOf(l: LinearSpec, shapes: ReadonlyMap<string, readonly number[]>): NBitsSpec | undefined {
  if (!l.weight.endsWith('.weight')) return undefined;
  const m = l.weight.slice(0, -'.weight'.length);
  const q = shapes.get(`${m}.qweight`);
  if (!q || q.length !== 3) return undefined;
  return {
    qweight: `${m}.qweight`,
    scales: `${m}.scales`,
    qzeros: `${m}.qzeros`,
    ...(shapes.has(`${m}.g_idx`) ? { gIdx: `${m}.g_idx` } : {}),
    blockSize: q[2]! * 2,
    blocks: q[1]!,
  };
}

/**
 * `a` with every Linear whose module `shapes` (prepared key → shape) holds packed annotated
 * with its MatMulNBits inputs, and how many were.
 */
export function withPackedLinears(a: ArchSpec, shapes: ReadonlyMap<string, readonly number[]>): { arch: ArchSpec; packed: number } {
  let packed = 0;
  const visit = (v: unknown): unknown => {
    if (Array.isArray(v)) {
      const next = v.map(visit);
      return next.some((x, i) => x !== v[i]) ? next : v;
    }
    if (!v || typeof v !== 'object') return v;
    const o = v as Record<string, unknown>;
    if (isLinear(o)) {
      const nbits = nbitsOf(o, shapes);
      if (!nbits) return o;
      packed++;
      return { ...o, nbits };
    }
    let changed = false;
    const next: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(o)) {
      next[k] = visit(x);
      if (next[k] !== x) changed = true;
    }
    return changed ? next : o;
  };
  return { arch: visit(a) as ArchSpec, packed };
}
