#!/usr/bin/env node
// Runs the built CLI when there is one (`npm run build`), else the TypeScript source through tsx.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const built = new URL('../dist/src/cli/partnerctl.js', import.meta.url);
if (existsSync(fileURLToPath(built))) {
  await import(built.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(new URL('../src/cli/partnerctl.ts', import.meta.url).href);
}
