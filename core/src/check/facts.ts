/**
 * dtype/shape facts a spec states about a tensor (v1's `shape`/`dtype`), compared with the
 * checkpoint header.
 */
import { dtypeFromName, prepareDtypeOf } from '../formats/dtype';
import type { TensorInfo } from '../formats/safetensors';
import type { SpecInput } from '../spec/types';
import { report, type CheckContext } from './context';

/** `[2, 3]` */
export function shapeText(shape: readonly (number | string)[]): string {
  return `[${shape.join(', ')}]`;
}

/**
 * Whether {@link checkInputFacts} has anything to compare for `input`: a declared shape or
 * dtype (v1 specs) of an input that is not quantized (packed storage: declared facts are
 * logical, not stored). Lets a caller skip looking the tensor up.
 */
export function statesFacts(input: SpecInput): boolean {
  return !input.quantization && (input.shape !== undefined || input.dtype !== undefined);
}

/** Compares a v1 input's declared `shape`/`dtype` (when present) with the tensor's header. */
export function checkInputFacts(ctx: CheckContext, i: number, info: TensorInfo): void {
  const input = ctx.spec.inputs[i]!;
  if (!statesFacts(input)) return; // nothing declared (v2+ specs), or quantized
  const node = ctx.sources.inputs.at(i)!.node;
  if (Array.isArray(input.shape) && !sameShape(input.shape, info.shape)) {
    report(
      ctx,
      'shape-mismatch',
      [...node, 'shape'],
      `inputs[${i}] declares shape ${shapeText(input.shape)} but "${info.key}" has shape ${shapeText(info.shape)}`,
    );
  }
  if (typeof input.dtype === 'string') {
    const d = dtypeFromName(input.dtype);
    if (d === undefined) {
      report(ctx, 'dtype-unknown', [...node, 'dtype'], `inputs[${i}]: unknown dtype "${input.dtype}"`);
    } else if (d !== info.dtype) {
      const want = prepareDtypeOf(d);
      report(
        ctx,
        'declared-dtype-mismatch',
        [...node, 'dtype'],
        `inputs[${i}] declares dtype ${input.dtype} but "${info.key}" is ${info.dtype}` +
          (want ? `; run \`weight-spec prepare --dtype ${want}\` and point the spec at the prepared checkpoint` : ''),
      );
    }
  }
}

/** Element-wise equality of two shapes. */
export function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, k) => x === b[k]);
}
