import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The fault suite has its own run: npm run test:faults (vitest.faults.config.ts).
    exclude: [...configDefaults.exclude, 'test/faults/**'],
    globalSetup: ['./test/support/global-setup.ts'],
    setupFiles: ['./test/support/every-test-asserts.ts'],
    pool: 'forks',
    // Files share their worker's module graph: the app's modules load once per worker, not once
    // per file. Each file still opens its own database copy and closes what it starts
    // (test/support/).
    isolate: false,
    // Two workers whatever the core count vitest sees (it takes one less than the cores: one on
    // two cores): many files wait on child processes, timers or PostgreSQL, and overlap well.
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
  },
});
