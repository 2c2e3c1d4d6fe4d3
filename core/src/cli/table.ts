/**
 * Plain-text tables for CLI listings: columns padded to their widest cell, two spaces apart,
 * no trailing spaces (so output diffs and greps cleanly).
 */

/** Options of {@link table}. */
export interface TableOptions {
  /** Column indices to right-align (numbers). */
  right?: number[];
  /** Spaces before every line. */
  indent?: number;
}

/** Renders a header row plus `rows` as aligned lines. */
export function table(header: string[], rows: string[][], opts: TableOptions = {}): string[] {
  const all = [header, ...rows];
  // A loop, not Math.max(...cells): a spread of 200,000 rows overflows the call stack.
  const widths = header.map((_, c) => all.reduce((w, r) => Math.max(w, (r[c] ?? '').length), 0));
  const right = new Set(opts.right ?? []);
  const pad = ' '.repeat(opts.indent ?? 0);
  return all.map((r) =>
    (
      pad +
      r
        .map((cell, c) => {
          const last = c === r.length - 1;
          if (right.has(c)) return cell.padStart(widths[c]!);
          return last ? cell : cell.padEnd(widths[c]!);
        })
        .join('  ')
    ).trimEnd(),
  );
}
