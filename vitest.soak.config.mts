import { defineConfig } from 'vitest/config';

/** The language-server soak, run on its own after the other suites (see vitest.config.mts). */
export default defineConfig({
  test: {
    include: ['server/test/**/*.soak.test.ts'],
    testTimeout: 600_000,
    hookTimeout: 120_000,
    pool: 'forks',
    globalSetup: ['test/support/temp-guard.ts'],
  },
});
