// A test that checks nothing passes whatever the code does: each test must make at least one
// assertion (a helper that throws, such as waitFor, is not one; assert what it returns).
import { beforeEach, expect } from 'vitest';

beforeEach(() => {
  expect.hasAssertions();
});
