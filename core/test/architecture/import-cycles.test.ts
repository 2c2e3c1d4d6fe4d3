/**
 * No import cycles (issue #29, step 5; issue #49): the relative imports of `core/src`,
 * `server/src` and `client/src`, read with TypeScript's own parser, form no cycle — neither
 * through value imports (a runtime cycle: a module can see another half-initialized), nor through
 * `import type` or an inline `import('./x').T` type (a circle in the layering, which a type-only
 * move dissolves), nor through a lazy `await import()` (a circle all the same, which the lazy
 * import only hides). The pipeline's units (prepare, compile, run, export's blocks/exporter/…; see
 * `unitOf`) form no cycle among themselves either. A cycle is reported as its strongly connected
 * component.
 *
 * KNOWN_CYCLES is empty since issue #29 step 5 dissolved the last circles (check's context ↔
 * planned by a type move, compile's fingerprint ↔ locate by decide.ts): it may only stay empty.
 * Issue #49 found four the check did not see (prepare/types ↔ overflow through an inline type,
 * cli/main ↔ commands/demo through a lazy import, export's blocks/ importing the exporter's
 * GraphBuilder, compile/ borrowing `pyRound` from run/ while run/ imports compile/): each kind is
 * shown found below, on a tree made in the test. The import graph is read by
 * test/support/import-graph.ts (shared with layers.test.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { importGraph, pipelineUnitGraph } from '../../../test/support/import-graph';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-cycles-');

const KNOWN_CYCLES: string[] = [];

/** The strongly connected components with more than one module (Tarjan), each as sorted paths joined by spaces. */
function cycles(graph: Map<string, string[]>): string[] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(scc.sort().join(' '));
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out.sort();
}

it('no runtime import cycle among core/src, server/src and client/src', () => {
  const g = importGraph(true);
  expect(g.size).toBeGreaterThan(150);
  expect(cycles(g)).toEqual([]);
});

it('no import cycle through type imports either, but the known ones still being reworked', () => {
  expect(cycles(importGraph(false))).toEqual(KNOWN_CYCLES);
});

it('no import cycle through lazy imports (await import) either', () => {
  expect(cycles(importGraph(false, true))).toEqual([]);
});

it('no cycle among the pipeline units (prepare, compile, run, export/blocks, export/exporter, …)', () => {
  expect(cycles(pipelineUnitGraph(importGraph(false, true)))).toEqual([]);
});

it('each kind of cycle #49 found is seen, on a tree with a deliberate one of each', () => {
  const root = tmp();
  const put = (file: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), text);
  };
  // an inline import() type, no import statement
  put('core/src/prepare/types.ts', "export interface T { n?: Record<string, import('./overflow').N> }\n");
  put('core/src/prepare/overflow.ts', "import type { T } from './types';\nexport interface N { t?: T }\n");
  // a lazy import back into the module that imports this one
  put('core/src/cli/main.ts', "import { demo } from './commands/demo';\nexport const main = () => demo;\n");
  put('core/src/cli/commands/demo.ts', "export async function demo() { return (await import('../main')).main; }\n");
  // a folder cycle between pipeline units, no module cycle: blocks/ ↔ exporter/, compile/ ↔ run/
  put('core/src/export/blocks/ops.ts', "import type { B } from '../exporter/builder';\nexport type Op = B;\n");
  put('core/src/export/exporter/builder.ts', 'export class B {}\n');
  put('core/src/export/exporter/decoder.ts', "import type { Op } from '../blocks/ops';\nexport type D = Op;\n");
  put('core/src/compile/specs.ts', "import { pyRound } from '../run/vlm/image';\nexport const r = pyRound;\n");
  put('core/src/run/vlm/image.ts', 'export const pyRound = Math.round;\n');
  put('core/src/run/index.ts', "export { compileStatus } from '../compile/status';\n");
  put('core/src/compile/status.ts', 'export const compileStatus = 1;\n');
  const roots = ['core/src'];
  expect(cycles(importGraph(true, false, roots, root))).toEqual([]);
  expect(cycles(importGraph(false, false, roots, root))).toEqual(['core/src/prepare/overflow.ts core/src/prepare/types.ts']);
  expect(cycles(importGraph(false, true, roots, root))).toEqual([
    'core/src/cli/commands/demo.ts core/src/cli/main.ts',
    'core/src/prepare/overflow.ts core/src/prepare/types.ts',
  ]);
  expect(cycles(pipelineUnitGraph(importGraph(false, true, roots, root)))).toEqual([
    'core/compile core/run',
    'core/export/blocks core/export/exporter',
  ]);
});

it('the cycle finder finds a cycle of three modules and leaves out the module that only imports into it', () => {
  const g = new Map([
    ['a.ts', ['b.ts']],
    ['b.ts', ['c.ts']],
    ['c.ts', ['a.ts']],
    ['d.ts', ['a.ts']],
  ]);
  expect(cycles(g)).toEqual(['a.ts b.ts c.ts']);
});
