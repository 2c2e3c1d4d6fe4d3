import { defineConfig } from 'vitest/config';

/**
 * The unit and integration suites. The language-server soak (`*.soak.test.ts`) measures
 * latency and heap, so it runs alone afterwards (vitest.soak.config.mts) rather than beside
 * CPU-heavy pipeline tests on a 2-core machine.
 */
export default defineConfig({
  test: {
    include: ['core/test/**/*.test.ts', 'server/test/**/*.test.ts', 'client/test/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/*.soak.test.ts'],
    // 60 s: the slowest single test takes ~20 s on 2 loaded cores; longer ones say so themselves.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // vitest's default is one worker per core minus one: a single worker on 2 cores. Most tests
    // wait on child processes (the CLI, ONNX Runtime, the server), so two workers use both cores:
    // 301 s → 192 s for the suite on this machine, same results.
    maxWorkers: 2,
    globalSetup: ['test/support/temp-guard.ts'],
  },
});
