/**
 * The relative imports of `core/src`, `server/src` and `client/src`, read with TypeScript's own
 * parser: what core/test/architecture/import-cycles.test.ts (no cycle), core/test/architecture/layers.test.ts (no import
 * down from a lower floor to a higher one) and core/test/architecture/architecture-doc.test.ts (the arrows
 * docs/ARCHITECTURE.md states) check. FLOORS is the layering, in one place.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { REPO_ROOT } from './fixtures';

export const ROOTS = ['core/src', 'server/src', 'client/src'];

/**
 * The floors, lowest first: a module imports only from its own floor or a lower one. Core's
 * top-level files and folders are named without `.ts`; `server` and `client` are whole.
 */
export const FLOORS: readonly (readonly string[])[] = [
  ['core/errors', 'core/problem-codes', 'core/zod-issue', 'core/display', 'core/file-stamp', 'core/foundation'],
  ['core/paths', 'core/hub', 'core/ort'],
  ['core/formats', 'core/spec'],
  ['core/artifacts'],
  ['core/resolve', 'core/prepare', 'core/export'],
  ['core/check', 'core/compile', 'core/run'],
  ['core/editor', 'core/view', 'core/protocol', 'core/demo'],
  ['core/cli', 'server', 'client'],
];

/** Same-floor pairs that must not import each other (the top floor's three programs). */
export const APART: readonly [string, string][] = [
  ['core/cli', 'server'],
  ['core/cli', 'client'],
  ['server', 'client'],
];

/** Every .ts file under `dir` (repository-relative). */
export function sources(dir: string): string[] {
  return fs
    .readdirSync(path.join(REPO_ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => path.relative(REPO_ROOT, path.join(e.parentPath, e.name)).split(path.sep).join('/'))
    .sort();
}

/** The module a relative specifier from `from` resolves to, if it is one of ours. */
function resolve(from: string, spec: string): string | undefined {
  const base = path.posix.join(path.posix.dirname(from), spec);
  return [`${base}.ts`, `${base}/index.ts`].find((f) => fs.existsSync(path.join(REPO_ROOT, f)));
}

/** True when an import or export declaration brings in types only. */
function typeOnly(st: ts.ImportDeclaration | ts.ExportDeclaration): boolean {
  if (ts.isImportDeclaration(st)) {
    const c = st.importClause;
    if (!c) return false; // a side-effect import runs the module
    if (c.isTypeOnly) return true;
    const b = c.namedBindings;
    return !c.name && !!b && ts.isNamedImports(b) && b.elements.length > 0 && b.elements.every((e) => e.isTypeOnly);
  }
  const c = st.exportClause;
  return st.isTypeOnly || (!!c && ts.isNamedExports(c) && c.elements.length > 0 && c.elements.every((e) => e.isTypeOnly));
}

/**
 * module → the modules it imports (`values`: value imports only). With `lazy`, a dynamic
 * `import('…')` counts too (the layering: a lazy import is still a dependency; the cycle check
 * leaves them out, as a lazy import cannot see a module half-initialized).
 */
export function importGraph(values: boolean, lazy = false): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of ROOTS.flatMap(sources)) {
    const sf = ts.createSourceFile(file, fs.readFileSync(path.join(REPO_ROOT, file), 'utf8'), ts.ScriptTarget.Latest, false);
    const deps: string[] = [];
    for (const st of sf.statements) {
      if (!(ts.isImportDeclaration(st) || ts.isExportDeclaration(st)) || !st.moduleSpecifier) continue;
      if (!ts.isStringLiteral(st.moduleSpecifier) || !st.moduleSpecifier.text.startsWith('.')) continue;
      if (values && typeOnly(st)) continue;
      const to = resolve(file, st.moduleSpecifier.text);
      if (to) deps.push(to);
    }
    const visit = (n: ts.Node): void => {
      if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword) {
        const a = n.arguments[0];
        const to = a && ts.isStringLiteral(a) && a.text.startsWith('.') ? resolve(file, a.text) : undefined;
        if (to) deps.push(to);
      }
      ts.forEachChild(n, visit);
    };
    if (lazy) visit(sf);
    graph.set(file, deps);
  }
  return graph;
}

/** The zone of a module: `core/<top-level file or folder>`, `server` or `client`. */
export function zoneOf(file: string): string {
  const p = file.split('/');
  if (p[0] !== 'core') return p[0]!;
  return `core/${p[2]!.replace(/\.ts$/, '')}`;
}

/** The floor of a zone, or -1 when FLOORS does not place it. */
export function floorOf(zone: string): number {
  return FLOORS.findIndex((f) => f.includes(zone));
}

/** Zone-level arrows (`a → b`, a ≠ b) with one example import each. */
export function zoneArrows(graph: Map<string, string[]>): Map<string, string> {
  const out = new Map<string, string>();
  for (const [from, deps] of graph)
    for (const to of deps) {
      const a = zoneOf(from);
      const b = zoneOf(to);
      if (a !== b && !out.has(`${a} → ${b}`)) out.set(`${a} → ${b}`, `${from} imports ${to}`);
    }
  return out;
}
