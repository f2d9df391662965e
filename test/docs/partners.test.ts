// docs/partners.md: its Node.js payment endpoint, run as written, verifies our real payment
// requests and pings and refuses a request signed with another secret; its Python one parses.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/paths.js';
import { createInvoice, showInvoice } from '../payments/support.js';
import { useTenant } from '../support/apps.js';
import { waitFor } from '../support/partner-endpoint.js';
import { useService } from '../support/service.js';

const guide = readFileSync(path.join(projectRoot, 'docs/partners.md'), 'utf8');

/** The fenced block of `language` whose first line is `firstLine`. */
function codeBlock(language: string, firstLine: string): string {
  const blocks = [...guide.matchAll(new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``, 'g'))].map(
    (match) => match[1],
  );
  const block = blocks.find((candidate) => candidate.startsWith(firstLine));
  if (!block) throw new Error(`no ${language} block starting with ${firstLine} in docs/partners.md`);
  return block;
}

describe('docs/partners.md', () => {
  const service = useService();
  const tenant = useTenant(service);
  let endpoint: ChildProcess;
  let endpointUrl: string;

  beforeAll(async () => {
    // Next to node_modules, so the example's `import 'standardwebhooks'` resolves as in a project.
    const dir = path.join(projectRoot, 'node_modules/.cache/docs-examples');
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, 'payment-endpoint.mjs');
    writeFileSync(file, codeBlock('js', '// payment-endpoint.mjs'));
    endpoint = spawn(process.execPath, [file], {
      env: { PATH: process.env.PATH, PORT: '0', PAYMENT_ENDPOINT_SECRET: tenant.credentials.payment_endpoint_secret },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    endpoint.stdout!.on('data', (chunk) => (output += chunk));
    const port = await waitFor('the example to listen', async () => /listening on (\d+)/.exec(output)?.[1]);
    endpointUrl = `http://127.0.0.1:${port}/`;
    await service.admin('PATCH', `/tenants/${tenant.tenant.id}`, { payment_endpoint_url: endpointUrl });
  });
  afterAll(() => endpoint?.kill());

  it('Node example: verifies a ping and a real payment request, and answers the payment_url', async () => {
    const ping = await service.admin('POST', `/tenants/${tenant.tenant.id}/payment-endpoint/ping`);
    expect(ping.json().ping).toMatchObject({ ok: true, http_status: 200 });

    const invoice = await createInvoice(service, tenant);
    const shown = await waitFor('the payment url', async () => {
      const current = await showInvoice(service, invoice.id);
      return current.invoice.payment_url ? current : undefined;
    });
    expect(shown.invoice.payment_url).toBe(`https://pay.example.com/${invoice.id}`);
    expect(shown.deliveries.map((delivery) => delivery.http_status)).toEqual([200]);
  });

  it('Node example: refuses a request signed with another secret', async () => {
    const body = JSON.stringify({ type: 'ping', tenant_id: tenant.tenant.id, created_at: new Date().toISOString() });
    const now = new Date();
    const forged = new Webhook('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw').sign('msg_forged', now, body);
    const response = await fetch(endpointUrl, {
      method: 'POST',
      headers: {
        'webhook-id': 'msg_forged',
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': forged,
      },
      body,
    });
    expect(response.status).toBe(401);
  });

  it('Python example: is valid Python', () => {
    const source = codeBlock('python', 'from flask import');
    expect(() =>
      execFileSync('python3', ['-c', 'import ast, sys; ast.parse(sys.stdin.read())'], { input: source }),
    ).not.toThrow();
  });
});
