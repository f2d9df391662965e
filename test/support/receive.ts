// A running `receive --json` (partnerctl's, or partner-tools.mjs as a partner runs it): the JSON
// lines it has printed so far, and its URL once it listens.
import type { ChildProcess } from 'node:child_process';
import type { operations } from '../../clients/typescript/generated/integrations.js';
import { waitFor } from './partner-endpoint.js';

/**
 * A printed line: the first says where it listens; each later one is a request received and its
 * answer (Delivery in src/cli/commands/partner-tools.ts). The tests send it payment requests.
 */
export interface ReceivedLine {
  listening?: string;
  received_at?: string;
  webhook_id?: string | null;
  verified?: boolean;
  error?: string;
  answered?: number;
  body?: operations['paymentRequested']['requestBody']['content']['application/json'];
}

export async function receiving(child: ChildProcess) {
  const lines: ReceivedLine[] = [];
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
