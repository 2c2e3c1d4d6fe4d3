/**
 * The checkpoint viewer's filter. A query is whitespace-separated terms that must all match.
 * A plain term matches anywhere in a key or shard name ("embed", "down_pr"), as a user types it
 * (issue 50: whole segments only found nothing for "embed"), but a number at a term's edge is a
 * whole number, so "experts.12" finds expert 12 and not experts 120–127 (issue 36). `*` stands
 * for any characters within one segment and `**` for any characters across segments
 * ("experts.*.down_proj", "*norm*").
 * `/regex/flags` is a JavaScript regular expression searched anywhere (case-insensitive unless
 * flags are given). Each term is tried on the key, the dtype, the shard's file name and the
 * shape's dims, each with its own segment separators.
 */

/** The fields of one table row that a filter looks at. */
export interface FilterFields {
  key: string;
  dtype: string;
  /** The shard's file name (relative to the checkpoint folder). */
  shard: string;
  shape: number[];
}

/** A compiled query: `test` a row; `error` says why a term was not understood (nothing then matches). */
export interface TensorFilter {
  test(row: FilterFields): boolean;
  /** True when the query has no terms (every row matches). */
  empty: boolean;
  error?: string;
}

/** The placeholder the viewer shows: the syntax in one line. */
export const FILTER_PLACEHOLDER =
  'Filter: any part of a key (embed, experts.12 — numbers whole), * within a segment (experts.*.w1), /regex/';

/** Separators of each field's segments: keys by dots, shard names by dots, dashes and slashes. */
const KEY_SEP = '.';
const SHARD_SEP = '.\\-/\\\\_';

const escapeRe = (s: string) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&');

/** A regex source for a glob term (`*` within a segment, `**` across), at a segment boundary at both ends. */
function segmentPattern(term: string, sep: string): string {
  return `(?<![^${sep}])${globBody(term, sep)}(?![^${sep}])`;
}

/** A regex source for a plain or glob term matched anywhere, except inside a number at the term's edges. */
function partPattern(term: string, sep: string): string {
  const head = /^\d/.test(term) ? '(?<!\\d)' : '';
  const tail = /\d$/.test(term) ? '(?!\\d)' : '';
  return `${head}${globBody(term, sep)}${tail}`;
}

/** A term's regex body: `**` any characters, `*` any within one segment (not `sep`), the rest literal. */
function globBody(term: string, sep: string): string {
  return term
    .split(/(\*\*|\*)/)
    .map((part) => (part === '**' ? '.*' : part === '*' ? `[^${sep}]*` : escapeRe(part)))
    .join('');
}

/** A term is `/source/flags` or a run of non-space characters; a regex may hold spaces. */
const TERM = /\/((?:\\.|[^/\\])+)\/([dgimsuy]*)(?=\s|$)|\S+/g;

type Term = (row: FilterFields) => boolean;

function compileTerm(raw: string, source: string | undefined, flags: string | undefined): Term {
  if (source !== undefined) {
    const re = new RegExp(source, (flags || 'i').replace(/[gy]/g, ''));
    return (r) => re.test(r.key) || re.test(r.dtype) || re.test(r.shard) || re.test(`[${r.shape.join(', ')}]`);
  }
  const key = new RegExp(partPattern(raw, escapeRe(KEY_SEP)), 'i');
  const shard = new RegExp(partPattern(raw, SHARD_SEP), 'i');
  const dim = new RegExp(`^${segmentPattern(raw, ',')}$`, 'i');
  const lower = raw.toLowerCase();
  return (r) => key.test(r.key) || r.dtype.toLowerCase() === lower || shard.test(r.shard) || r.shape.some((d) => dim.test(String(d)));
}

/** Compiles `query` (see the module comment). */
export function compileTensorFilter(query: string): TensorFilter {
  const terms: Term[] = [];
  for (const m of query.matchAll(TERM)) {
    try {
      terms.push(compileTerm(m[0], m[1], m[2]));
    } catch (e) {
      return { test: () => false, empty: false, error: `${m[0]}: ${e instanceof Error ? e.message : String(e)}` };
    }
  }
  return { test: (row) => terms.every((t) => t(row)), empty: terms.length === 0 };
}
