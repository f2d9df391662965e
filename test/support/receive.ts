// A running `receive --json` (partnerctl's, or partner-tools.mjs as a partner runs it): the JSON
// lines it has printed so far, and its URL once it listens.
import type { ChildProcess } from 'node:child_process';
import { waitFor } from './partner-endpoint.js';

export async function receiving(child: ChildProcess) {
  const lines: Record<string, any>[] = [];
  let pending = '';
  child.stdout!.on('data', (chunk) => {
    pending += chunk;
    const complete = pending.split('\n');
    pending = complete.pop()!;
    lines.push(...complete.filter(Boolean).map((line) => JSON.parse(line)));
  });
  const { listening } = await waitFor('receive to listen', async () => lines.find((line) => line.listening));
  return { child, lines, url: listening as string };
}
