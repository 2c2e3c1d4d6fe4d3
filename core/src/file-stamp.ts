/**
 * A file's stamp (`size:mtime:inode`): what every cache and the compile record compare to know
 * a file is unchanged without reading it.
 */
import { statSync, type Stats } from 'node:fs';

/** The stamp of stat results. */
export function statStamp(st: Pick<Stats, 'size' | 'mtimeMs' | 'ino'>): string {
  return `${st.size}:${st.mtimeMs}:${st.ino}`;
}

/** The stamp of a regular file, or undefined (missing, unreadable, not a file). */
export function fileStamp(file: string): string | undefined {
  try {
    const st = statSync(file);
    return st.isFile() ? statStamp(st) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The stamp of any path (a directory too), or `-` when it cannot be stat'ed: what the compile
 * record keeps per input and the extension's index compares.
 */
export function pathStamp(file: string): string {
  try {
    return statStamp(statSync(file));
  } catch {
    return '-';
  }
}

/**
 * `read` memoized by file stamp: a file is read again only after it changed; a failed read
 * (`read` throws) gives undefined and is remembered the same way. At most `capacity` files are
 * kept (then the memo starts over); a missing file is never cached.
 */
export function memoByStamp<T>(read: (file: string) => T | undefined, capacity: number): (file: string) => T | undefined {
  const memo = new Map<string, { stamp: string; value: T | undefined }>();
  return (file) => {
    const stamp = fileStamp(file);
    if (!stamp) return undefined;
    const hit = memo.get(file);
    if (hit?.stamp === stamp) return hit.value;
    let value: T | undefined;
    try {
      value = read(file);
    } catch {
      value = undefined;
    }
    if (memo.size > capacity) memo.clear();
    memo.set(file, { stamp, value });
    return value;
  };
}
