import { defineConfig } from 'vitest/config';

/**
 * The unit and integration suites. The language-server soak (`*.soak.test.ts`) measures
 * latency and heap, so it runs alone afterwards (vitest.soak.config.mts) rather than beside
 * CPU-heavy pipeline tests on a 2-core machine.
 */
export default defineConfig({
  test: {
    include: ['core/test/**/*.test.ts', 'server/test/**/*.test.ts', 'client/test/**/*.test.ts', 'test/unit/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/*.soak.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    globalSetup: ['test/support/temp-guard.ts'],
  },
});
