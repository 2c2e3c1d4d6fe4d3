/**
 * The test side of a family that is "one file": `core/test/support/families/<name>.ts` exports
 * `familyTest` (a {@link FamilyTest}: the registry row, its random HF-layout checkpoint and its
 * float64 reference forward written from HF's modeling file). Those files are found here by
 * name, so adding one edits no dispatcher: `graph-random.ts` and `graph-reference.ts` look a
 * config's family up in {@link familyTestOf} before their own tables, and the family's test
 * (`core/test/graph/<name>.test.ts`) hands the same object to the kit (`family-kit.ts`).
 *
 * A family test file imports only leaves (`random-tensors.ts`, `graph-support.ts` types, the
 * family's own source), never the dispatchers, so the eager import below makes no cycle.
 */
import type { FamilyRow, TestConfig } from '../../src/export/families/row';
import { familyOfConfig } from '../../src/export/families/registry';
import type { F32 } from './graph-support';

/** A checkpoint by key (float32 values, bf16-rounded). */
export type Weights = Map<string, F32>;
/** Full-sequence logits `[T][V]` of `ids` (row t predicts token t+1), float64, no cache. */
export type ReferenceForward = (cfg: TestConfig, w: Weights, ids: number[]) => number[][];

/** What a family's test file gives the kit and the generic suites. */
export interface FamilyTest {
  /** The family's registry row (its `test.configs` are the configs judged). */
  row: FamilyRow;
  /** A random checkpoint of `cfg` with HF's key names and shapes (written independently of the graph builder). */
  random: (cfg: TestConfig, seed: number) => Weights;
  /** The independent reference forward. */
  reference: ReferenceForward;
}

const FOUND = import.meta.glob<FamilyTest>('./families/*.ts', { eager: true, import: 'familyTest' });

/** Every family test file's export, by its row's model_type. */
export const FAMILY_TESTS: ReadonlyMap<string, FamilyTest> = new Map(
  Object.entries(FOUND).map(([file, t]) => {
    if (!t?.row) throw new Error(`${file}: exports no familyTest`);
    return [t.row.modelType, t];
  }),
);

/** The family test of a config's family (by model_type, alias or `architectures`), if it has a file. */
export function familyTestOf(cfg: TestConfig): FamilyTest | undefined {
  const row = familyOfConfig(cfg);
  return row ? FAMILY_TESTS.get(row.modelType) : undefined;
}
