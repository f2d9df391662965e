// partnerctl commands for tenants, their credentials, backend partner keys, and the signing
// secrets' rekey after a SECRET_ENCRYPTION_KEY rotation.

import { TENANT_CREDENTIAL_KINDS } from '../../tenants/index.js';
import { CliError } from '../admin-client.js';
import { type Command, positional, required } from '../command.js';
import { type Row, record, table } from '../output.js';

const TENANT_COLUMNS = ['id', 'slug', 'name', 'gateway', 'is_active', 'payment_endpoint_url'];
const CREDENTIAL_COLUMNS = ['id', 'kind', 'hint', 'created_at', 'revoked_at', 'last_used_at'];
const SECRET_WARNING = 'Secrets are shown once: store them now.';

function secretsText(secrets: Record<string, string>): string {
  return `${record(secrets)}\n\n${SECRET_WARNING}`;
}

const setActive =
  (isActive: boolean): Command['run'] =>
  async (invocation) => {
    const id = positional(invocation, 0, 'tenant id');
    const { tenant } = await invocation
      .admin()
      .request<{ tenant: Row }>('PATCH', `/tenants/${id}`, { is_active: isActive });
    invocation.output(record(tenant), { tenant });
  };

export const tenantCommands: Command[] = [
  {
    name: 'tenants list',
    summary: 'List tenants',
    async run(invocation) {
      const { tenants } = await invocation.admin().request<{ tenants: Row[] }>('GET', '/tenants');
      invocation.output(table(tenants, TENANT_COLUMNS), { tenants });
    },
  },
  {
    name: 'tenants create',
    summary: 'Create a tenant and print its three secrets (once)',
    usage: '--name NAME --slug SLUG --gateway GATEWAY [--endpoint URL]',
    options: {
      name: { type: 'string' },
      slug: { type: 'string' },
      gateway: { type: 'string' },
      endpoint: { type: 'string' },
    },
    async run(invocation) {
      const { options } = invocation;
      const created = await invocation
        .admin()
        .request<{ tenant: Row; credentials: Record<string, string> }>('POST', '/tenants', {
          name: required(options, 'name'),
          slug: required(options, 'slug'),
          gateway: required(options, 'gateway'),
          ...(typeof options.endpoint === 'string' && { payment_endpoint_url: options.endpoint }),
        });
      invocation.output(`${record(created.tenant)}\n\n${secretsText(created.credentials)}`, created);
    },
  },
  {
    name: 'tenants show',
    summary: 'Show a tenant and its credentials',
    usage: 'TENANT_ID',
    async run(invocation) {
      const id = positional(invocation, 0, 'tenant id');
      const client = invocation.admin();
      const { tenant, last_ping } = await client.request<{ tenant: Row; last_ping: Row | null }>(
        'GET',
        `/tenants/${id}`,
      );
      const { credentials } = await client.request<{ credentials: Row[] }>('GET', `/tenants/${id}/credentials`);
      const ping = last_ping ? `\n\nlast ping:\n${record(last_ping)}` : '';
      invocation.output(`${record(tenant)}\n\n${table(credentials, CREDENTIAL_COLUMNS)}${ping}`, {
        tenant,
        credentials,
        last_ping,
      });
    },
  },
  {
    name: 'tenants update',
    summary: "Change a tenant's name, gateway, payment endpoint or test payment endpoint",
    usage: 'TENANT_ID [--name NAME] [--gateway GATEWAY] [--endpoint URL|none] [--test-endpoint URL|none]',
    options: {
      name: { type: 'string' },
      gateway: { type: 'string' },
      endpoint: { type: 'string' },
      'test-endpoint': { type: 'string' },
    },
    async run(invocation) {
      const id = positional(invocation, 0, 'tenant id');
      const { name, gateway, endpoint } = invocation.options;
      const testEndpoint = invocation.options['test-endpoint'];
      const urlOrNull = (url: string) => (url === 'none' ? null : url);
      const { tenant } = await invocation.admin().request<{ tenant: Row }>('PATCH', `/tenants/${id}`, {
        ...(typeof name === 'string' && { name }),
        ...(typeof gateway === 'string' && { gateway }),
        ...(typeof endpoint === 'string' && { payment_endpoint_url: urlOrNull(endpoint) }),
        ...(typeof testEndpoint === 'string' && { test_payment_endpoint_url: urlOrNull(testEndpoint) }),
      });
      invocation.output(record(tenant), { tenant });
    },
  },
  {
    name: 'tenants ping',
    summary: "Send a signed ping to the tenant's payment endpoint now; exits 1 unless it answered 2xx",
    usage: 'TENANT_ID',
    async run(invocation) {
      const id = positional(invocation, 0, 'tenant id');
      const { ping } = await invocation.admin().request<{ ping: Row }>('POST', `/tenants/${id}/payment-endpoint/ping`);
      invocation.output(record(ping), { ping });
      if (!ping.ok) process.exitCode = 1;
    },
  },
  {
    name: 'tenants deactivate',
    summary: 'Deactivate a tenant: all its credentials fail at once',
    usage: 'TENANT_ID',
    run: setActive(false),
  },
  { name: 'tenants activate', summary: 'Activate a tenant again', usage: 'TENANT_ID', run: setActive(true) },
  {
    name: 'credentials issue',
    summary: 'Issue another secret for a tenant (rotation: earlier ones stay valid until revoked)',
    usage: `TENANT_ID --kind ${TENANT_CREDENTIAL_KINDS.join('|')}`,
    options: { kind: { type: 'string' } },
    async run(invocation) {
      const id = positional(invocation, 0, 'tenant id');
      const issued = await invocation.admin().request<Row>('POST', `/tenants/${id}/credentials`, {
        kind: required(invocation.options, 'kind'),
      });
      // Named as `credentials revoke` names it: the API answers this one bare (DECISIONS §8).
      invocation.output(`${record(issued)}\n\n${SECRET_WARNING}`, { credential: issued });
    },
  },
  {
    name: 'credentials revoke',
    summary: 'Revoke a tenant credential; it stops working on the next request',
    usage: 'CREDENTIAL_ID',
    async run(invocation) {
      const id = positional(invocation, 0, 'credential id');
      const { credential } = await invocation.admin().request<{ credential: Row }>('DELETE', `/credentials/${id}`);
      invocation.output(record(credential), { credential });
    },
  },
  {
    name: 'partner-keys list',
    summary: 'List backend partner keys',
    async run(invocation) {
      const { partner_keys } = await invocation.admin().request<{ partner_keys: Row[] }>('GET', '/partner-keys');
      invocation.output(
        table(partner_keys, ['id', 'name', 'scopes', 'tenant_id', 'hint', 'revoked_at', 'last_used_at']),
        {
          partner_keys,
        },
      );
    },
  },
  {
    name: 'partner-keys create',
    summary: 'Issue a backend partner key (printed once)',
    usage: '--name NAME --scope countries:read [--scope cities:read] [--tenant TENANT_ID]',
    options: { name: { type: 'string' }, scope: { type: 'string', multiple: true }, tenant: { type: 'string' } },
    async run(invocation) {
      const { options } = invocation;
      const scopes = (options.scope as string[] | undefined) ?? [];
      const created = await invocation.admin().request<Row>('POST', '/partner-keys', {
        name: required(options, 'name'),
        scopes,
        ...(typeof options.tenant === 'string' && { tenant_id: options.tenant }),
      });
      // Named as `partner-keys revoke` names it: the API answers this one bare (DECISIONS §8).
      invocation.output(`${record(created)}\n\n${SECRET_WARNING}`, { partner_key: created });
    },
  },
  {
    name: 'partner-keys revoke',
    summary: 'Revoke a backend partner key',
    usage: 'KEY_ID',
    async run(invocation) {
      const id = positional(invocation, 0, 'key id');
      const { partner_key } = await invocation.admin().request<{ partner_key: Row }>('DELETE', `/partner-keys/${id}`);
      invocation.output(record(partner_key), { partner_key });
    },
  },
  {
    name: 'secrets rekey',
    summary: "Seal every payment endpoint signing secret again under the service's SECRET_ENCRYPTION_KEY",
    async run(invocation) {
      const summary = await invocation
        .admin()
        .request<{ resealed: number; secrets: number; unreadable: string[] }>('POST', '/secrets/rekey');
      const text = `${summary.resealed} of ${summary.secrets} signing secrets sealed again under the current key`;
      invocation.output(text, summary);
      if (summary.unreadable.length > 0) {
        throw new CliError(
          `no configured key opens the secrets of credentials ${summary.unreadable.join(', ')}: ` +
            'add the key that sealed them to SECRET_ENCRYPTION_KEY_PREVIOUS and run this again',
        );
      }
    },
  },
];
