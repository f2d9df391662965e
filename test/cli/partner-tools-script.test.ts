// The partner tools as a partner gets them: downloaded from the integrations host's docs into a
// directory outside the project, run with Node alone (no node_modules near it, nothing but PATH
// in the environment) and only the tenant's own secrets: `receive` verifies the real payment
// request, `simulate notify` reports the payment with the fields that request carried. The
// committed file is what the sources bundle to now.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerToolsBundle } from '../../scripts/generate-partner-tools.js';
import { partnerToolsFile } from '../../src/paths.js';
import { createInvoice, showInvoice } from '../payments/support.js';
import { useTenant } from '../support/apps.js';
import { waitFor } from '../support/partner-endpoint.js';
import { receiving } from '../support/receive.js';
import { useService } from '../support/service.js';

const service = useService();
const tenant = useTenant(service);
let dir: string;
let script: string;
let receiver: ChildProcess | undefined;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'partner-tools-'));
  script = path.join(dir, 'partner-tools.mjs');
  const download = await fetch(`${service.urls.integrations}/docs/partner-tools.mjs`);
  expect(download.status).toBe(200);
  expect(download.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
  writeFileSync(script, Buffer.from(await download.arrayBuffer()));
});
afterAll(async () => {
  receiver?.kill();
  rmSync(dir, { recursive: true, force: true });
});

const run = (args: string[]) =>
  spawn(process.execPath, [script, ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });

async function finished(args: string[]) {
  const child = run(args);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const [code] = await once(child, 'exit');
  return { code: code as number, stdout, stderr };
}

describe('partner-tools.mjs served by the integrations host', () => {
  it('receives and verifies a real payment request, then reports the payment with the partner API key only', async () => {
    const receive = await receiving(
      run(['receive', '--port', '0', '--json', '--secret', tenant.credentials.payment_endpoint_secret]),
    );
    receiver = receive.child;
    const { lines, url: listening } = receive;
    await service.admin('PATCH', `/tenants/${tenant.tenant.id}`, { payment_endpoint_url: listening });

    const invoice = await createInvoice(service, tenant, { amount: '310.25' });
    const request = await waitFor('the payment request printed', async () =>
      lines.find((line) => line.body?.type === 'payment.requested'),
    );
    expect(request).toMatchObject({ verified: true, answered: 200, body: { invoice_id: invoice.id } });

    const { amount, currency, gateway, notify_url: notifyUrl } = request.body!;
    const reported = await finished([
      'simulate',
      'notify',
      ...['--invoice', invoice.id, '--status', 'paid', '--api-key', tenant.credentials.partner_api_key],
      ...['--url', notifyUrl, '--amount', amount, '--currency', currency, '--gateway', gateway, '--json'],
    ]);
    expect(reported.code, reported.stderr).toBe(0);
    expect(JSON.parse(reported.stdout).response).toEqual({ status: 200, body: { status: 'success' } });
    expect((await showInvoice(service, invoice.id)).invoice.status).toBe('paid');
  });

  it('says what a partner must give, and shows a refusal as answered', async () => {
    const help = await finished(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('simulate notify');
    expect(help.stdout).toContain('receive');

    const withoutFields = await finished([
      'simulate',
      'notify',
      '--invoice',
      crypto.randomUUID(),
      '--status',
      'paid',
      '--api-key',
      'k',
    ]);
    expect(withoutFields.code).toBe(1);
    expect(withoutFields.stderr).toMatch(/--amount, --currency and --gateway are required/);

    const wrongKey = await finished([
      'simulate',
      'notify',
      ...['--invoice', crypto.randomUUID(), '--status', 'paid', '--api-key', tenant.credentials.sso_hmac_secret],
      ...['--url', service.urls.integrations!, '--amount', '1.00', '--currency', 'SAR', '--gateway', 'tap'],
    ]);
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stdout).toContain('HTTP 401');
  });

  it('is, as committed, what the sources bundle to (npm run generate:partner-tools)', async () => {
    expect(readFileSync(partnerToolsFile, 'utf8') === (await partnerToolsBundle())).toBe(true);
  });
});
