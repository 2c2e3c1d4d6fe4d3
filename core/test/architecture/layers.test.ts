/**
 * The layering is enforced (issue #29, step 5): every module of `core/src`, `server/src` and
 * `client/src` belongs to a floor (test/support/import-graph.ts FLOORS, the table
 * docs/ARCHITECTURE.md shows) and imports — by value, by type or lazily — only from its own floor
 * or a lower one; the CLI, the server and the client never import each other. A new top-level
 * folder must be given a floor.
 */
import { expect, it } from 'vitest';
import { APART, floorOf, importGraph, zoneArrows, zoneOf } from '../../../test/support/import-graph';

const graph = importGraph(false, true);

it('every module lies on a floor', () => {
  const unplaced = [...new Set([...graph.keys()].map(zoneOf))].filter((z) => floorOf(z) < 0);
  expect(unplaced).toEqual([]);
});

it('no import goes up a floor, and the three programs stay apart', () => {
  const bad = [...zoneArrows(graph)]
    .filter(([arrow]) => {
      const [a, b] = arrow.split(' → ') as [string, string];
      return floorOf(b) > floorOf(a) || APART.some(([x, y]) => (a === x && b === y) || (a === y && b === x));
    })
    .map(([arrow, example]) => `${arrow} (${example})`);
  expect(bad).toEqual([]);
});

it('the check finds a violation: an arrow from a foundation module up to compile', () => {
  const g = new Map([...graph, ['core/src/errors.ts', ['core/src/compile/index.ts']]]);
  const up = [...zoneArrows(g)].filter(([arrow]) => {
    const [a, b] = arrow.split(' → ') as [string, string];
    return floorOf(b) > floorOf(a);
  });
  expect(up.map(([a]) => a)).toEqual(['core/errors → core/compile']);
});
