// The fault suite (`npm run test:faults`): real service processes over HTTP, broken on purpose
// (database restarts, kills, full disks, slow clients), then the database checked. Files run one
// at a time: each measures latencies, which a neighbour's load would skew.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/faults/**/*.test.ts'],
    globalSetup: ['./test/faults/support/global-setup.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
  },
});
