/**
 * A re-implementation of Python's `json.dumps` output for the values a spec can hold, so the
 * bytes this tool writes are the bytes QEfficient writes: `sort_keys` orders by code point,
 * `ensure_ascii` escapes everything outside printable ASCII as lowercase `\uXXXX` (astral
 * characters as surrogate pairs), `indent` puts one item per line with `,` separators, and
 * floats follow `repr` (exponent below 1e-4 and from 1e16 on, `e-05` style exponents).
 */

/** Options mirroring the arguments of Python's `json.dumps`. */
export interface PyJsonOptions {
  /** Spaces per level; undefined = single line. */
  indent?: number;
  /** `[item, key]` separators; Python's default is `[', ', ': ']`, or `[',', ': ']` with indent. */
  separators?: [string, string];
  sortKeys?: boolean;
}

/** Serializes `value` exactly as CPython's `json.dumps(value, ensure_ascii=True, ...)`. */
export function pyJsonDumps(value: unknown, opts: PyJsonOptions = {}): string {
  const [itemSep, keySep] = opts.separators ?? (opts.indent !== undefined ? [',', ': '] : [', ', ': ']);
  const out: string[] = [];
  const emit = (v: unknown, depth: number): void => {
    if (v === null || v === undefined) {
      out.push('null');
    } else if (typeof v === 'string') {
      out.push(pyString(v));
    } else if (typeof v === 'number') {
      out.push(pyNumber(v));
    } else if (typeof v === 'bigint') {
      out.push(v.toString());
    } else if (typeof v === 'boolean') {
      out.push(v ? 'true' : 'false');
    } else if (Array.isArray(v)) {
      if (v.length === 0) {
        out.push('[]');
        return;
      }
      out.push('[');
      v.forEach((item, i) => {
        if (i > 0) out.push(itemSep);
        newline(depth + 1);
        emit(item, depth + 1);
      });
      newline(depth);
      out.push(']');
    } else if (typeof v === 'object') {
      // undefined-valued properties do not exist for JSON (as JSON.stringify treats them).
      const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined);
      if (opts.sortKeys) entries.sort((a, b) => codePointCompare(a[0], b[0]));
      if (entries.length === 0) {
        out.push('{}');
        return;
      }
      out.push('{');
      entries.forEach(([k, x], i) => {
        if (i > 0) out.push(itemSep);
        newline(depth + 1);
        out.push(pyString(k), keySep);
        emit(x, depth + 1);
      });
      newline(depth);
      out.push('}');
    } else {
      throw new TypeError(`Object of type ${typeof v} is not JSON serializable`);
    }
  };
  const newline = (depth: number): void => {
    if (opts.indent !== undefined) out.push('\n' + ' '.repeat(opts.indent * depth));
  };
  emit(value, 0);
  return out.join('');
}

/** Orders strings by Unicode code point, as Python compares `str` (JS `<` compares UTF-16 units). */
export function codePointCompare(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // A surrogate (an astral code point) sorts above every BMP unit outside the surrogate block.
    const hx = x >= 0xd800 && x <= 0xdfff;
    const hy = y >= 0xd800 && y <= 0xdfff;
    if (hx !== hy) return hx ? 1 : -1;
    return x - y;
  }
  return a.length - b.length;
}

const SHORT_ESCAPES: Record<number, string> = {
  0x22: '\\"',
  0x5c: '\\\\',
  0x0a: '\\n',
  0x0d: '\\r',
  0x09: '\\t',
  0x08: '\\b',
  0x0c: '\\f',
};

/** Python's `py_encode_basestring_ascii`. */
export function pyString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const short = SHORT_ESCAPES[c];
    if (short !== undefined) out += short;
    else if (c < 0x20 || c > 0x7e) out += '\\u' + c.toString(16).padStart(4, '0');
    else out += s[i];
  }
  return out + '"';
}

/**
 * Python's output for a number. JSON values parsed in JS lose the int/float distinction, so
 * integral values are written as Python ints (what a spec's indices and sizes are).
 */
export function pyNumber(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return 'Infinity';
  if (x === -Infinity) return '-Infinity';
  if (Number.isInteger(x)) return BigInt(x).toString();
  // toExponential() without digits gives the shortest round-tripping mantissa, like repr.
  const [mant, expStr] = x.toExponential().split('e') as [string, string];
  const exp = Number(expStr);
  if (exp < -4 || exp >= 16) {
    const sign = exp < 0 ? '-' : '+';
    return `${mant}e${sign}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  const neg = mant.startsWith('-');
  const digits = mant.replace('-', '').replace('.', '');
  let fixed: string;
  if (exp >= 0) {
    const intLen = exp + 1;
    fixed = digits.length > intLen ? `${digits.slice(0, intLen)}.${digits.slice(intLen)}` : `${digits.padEnd(intLen, '0')}.0`;
  } else {
    fixed = `0.${'0'.repeat(-exp - 1)}${digits}`;
  }
  return (neg ? '-' : '') + fixed;
}
