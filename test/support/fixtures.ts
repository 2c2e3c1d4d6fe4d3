/**
 * Locates the shared, read-only fixtures. Tests that need them call `fixturesDir()` via
 * `describeFixtures`: where the folder is absent (a user's fresh clone) those tests are
 * skipped with a printed notice; under CI=true its absence is a failure.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe } from 'vitest';

const repoRoot = path.resolve(__dirname, '..', '..');

/** Absolute path of the fixtures folder (WEIGHT_SPEC_FIXTURES overrides the default). */
export function fixturesDir(): string {
  return path.resolve(process.env.WEIGHT_SPEC_FIXTURES ?? path.join(repoRoot, '..', 'shared', 'fixtures'));
}

/** Absolute path of `../shared/configs` (full-size configs for benchmarks). */
export function configsDir(): string {
  return path.join(path.dirname(fixturesDir()), 'configs');
}

/** True when the fixtures exist. Under CI=true a missing folder throws. */
export function haveFixtures(): boolean {
  const ok = existsSync(path.join(fixturesDir(), 'llama', 'config.json'));
  if (!ok && process.env.CI === 'true') {
    throw new Error(`fixtures missing at ${fixturesDir()} (CI=true requires them; set WEIGHT_SPEC_FIXTURES)`);
  }
  return ok;
}

let noticed = false;
/** `describe` that runs only when the fixtures exist, printing a notice once otherwise. */
export function describeFixtures(name: string, fn: () => void): void {
  if (haveFixtures()) {
    describe(name, fn);
  } else {
    if (!noticed) {
      noticed = true;
      console.warn(`[weight-spec] fixtures not found at ${fixturesDir()}: fixture tests skipped`);
    }
    describe.skip(name, fn);
  }
}

/** Families that ship a legacy.onnx and reference.json. */
export const LEGACY_FAMILIES = ['llama', 'qwen2', 'phi3', 'mixtral', 'gpt2'] as const;

/** Repository root (for spawning the built CLI). */
export const REPO_ROOT = repoRoot;
