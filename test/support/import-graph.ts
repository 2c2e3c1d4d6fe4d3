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

/** Every .ts file under `dir` (relative to `root`, the repository by default). */
export function sources(dir: string, root = REPO_ROOT): string[] {
  return fs
    .readdirSync(path.join(root, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)).split(path.sep).join('/'))
    .sort();
}

/** The module a relative specifier from `from` resolves to, if it is one of ours. */
function resolve(root: string, from: string, spec: string): string | undefined {
  const base = path.posix.join(path.posix.dirname(from), spec);
  return [`${base}.ts`, `${base}/index.ts`].find((f) => fs.existsSync(path.join(root, f)));
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
 * module → the modules it imports (`values`: value imports only; otherwise type imports count
 * too, including an inline `import('./x').T` type, which no import statement shows). With
 * `lazy`, a dynamic `await import('…')` counts too: a lazy import is still a dependency, both for
 * the layering and for the cycle check (a cycle through one is a circle in the design even though
 * no module sees another half-initialized). `roots` and `root` let a test read a tree it made.
 */
export function importGraph(values: boolean, lazy = false, roots: readonly string[] = ROOTS, root = REPO_ROOT): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of roots.flatMap((d) => sources(d, root))) {
    const sf = ts.createSourceFile(file, fs.readFileSync(path.join(root, file), 'utf8'), ts.ScriptTarget.Latest, false);
    const deps: string[] = [];
    const add = (spec: ts.Node | undefined): void => {
      if (!spec || !ts.isStringLiteral(spec) || !spec.text.startsWith('.')) return;
      const to = resolve(root, file, spec.text);
      if (to) deps.push(to);
    };
    for (const st of sf.statements) {
      if (!(ts.isImportDeclaration(st) || ts.isExportDeclaration(st)) || !st.moduleSpecifier) continue;
      if (values && typeOnly(st)) continue;
      add(st.moduleSpecifier);
    }
    const visit = (n: ts.Node): void => {
      if (lazy && ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword) add(n.arguments[0]);
      // `import('./x').T` in a type position: a type import without an import statement
      if (!values && ts.isImportTypeNode(n) && ts.isLiteralTypeNode(n.argument)) add(n.argument.literal);
      ts.forEachChild(n, visit);
    };
    visit(sf);
    graph.set(file, deps);
  }
  return graph;
}

/**
 * A pipeline unit: the zone (`core/prepare`, `core/compile`, `core/run`, …; a zone's subfolders
 * belong to it), except that `core/export` is its parts, which ARCHITECTURE.md layers among
 * themselves (`core/export/blocks`, `…/exporter`, `…/families`, `…/vlm`, `…/from-onnx`, and
 * `write-export.ts` on its own).
 */
export function unitOf(file: string): string {
  const zone = zoneOf(file);
  if (zone !== 'core/export') return zone;
  return `core/export/${file.split('/')[3]!.replace(/\.ts$/, '')}`;
}

/**
 * The unit graph of the pipeline (floors 4 and 5: resolve, prepare, export's parts, check,
 * compile, run): each unit → the units its modules import (itself left out). A cycle here is two
 * units leaning on each other (compile/ borrowing a helper from run/ while run/ imports
 * compile/; export's blocks/ importing the exporter above them), which no module-level cycle
 * need show.
 */
export function pipelineUnitGraph(graph: Map<string, string[]>): Map<string, string[]> {
  const inPipeline = (f: string) => [4, 5].includes(floorOf(zoneOf(f)));
  const out = new Map<string, Set<string>>();
  for (const [from, deps] of graph) {
    if (!inPipeline(from)) continue;
    const a = unitOf(from);
    const set = out.get(a) ?? out.set(a, new Set()).get(a)!;
    for (const to of deps) if (inPipeline(to) && unitOf(to) !== a) set.add(unitOf(to));
  }
  return new Map([...out].map(([k, v]) => [k, [...v].sort()]));
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
