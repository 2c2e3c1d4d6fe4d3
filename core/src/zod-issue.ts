/**
 * The one formatter of zod issues — spec, config.json, prepared manifest, compile.json all
 * say what is wrong the same way: `<json path>: <message>`, the path as a reader writes it
 * (`inputs[3].location.key`, `rope_scaling.factor`, `(document)` for the root).
 */
import type { z } from 'zod';
import { FormatError } from './errors';

/** A JSON path as a reader writes it: `a.b[3]["odd key"]`; `(document)` when empty. */
export function formatPath(path: Readonly<(string | number)[]>): string {
  let s = '';
  for (const p of path) {
    if (typeof p === 'number') s += `[${p}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(p)) s += s ? `.${p}` : p;
    else s += `[${JSON.stringify(p)}]`;
  }
  return s || '(document)';
}

/** The issue's path without symbol keys (zod allows them; JSON has none). */
export function issuePath(issue: z.core.$ZodIssue): (string | number)[] {
  return issue.path.filter((x): x is string | number => typeof x !== 'symbol');
}

/** One line: `<path>: <message>`. */
export function formatIssue(issue: z.core.$ZodIssue): string {
  return `${formatPath(issuePath(issue))}: ${issue.message}`;
}

/**
 * Parses `raw` with `schema`; the first issue becomes a FormatError naming `file`, prefixed
 * with what the file is (`invalid prepared manifest: output_files[0].size: …`).
 */
export function parseOrThrow<T>(schema: z.ZodType<T>, raw: unknown, file: string, what?: string): T {
  const r = schema.safeParse(raw);
  if (r.success) return r.data;
  const text = formatIssue(r.error.issues[0]!);
  throw new FormatError(file, what ? `${what}: ${text}` : text);
}
