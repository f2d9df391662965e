// The pure rules of the outbound payment request: retry schedule, Retry-After, signatures, SSRF guard.
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import {
  backoffSeconds,
  DEFAULT_RETRY_POLICY,
  nextAttemptDelay,
  retryAfterSeconds,
} from '../../src/payments/delivery/retry.js';
import { signatureHeader } from '../../src/payments/delivery/sign.js';
import { isPublicAddress, pinnedLookup, resolveEndpoint } from '../../src/payments/endpoint-address.js';

describe('retry schedule', () => {
  it('doubles from the base, within [half, full] of the nominal delay, capped at an hour', () => {
    const low = (attempt: number) => backoffSeconds(DEFAULT_RETRY_POLICY, attempt, () => 0);
    const high = (attempt: number) => backoffSeconds(DEFAULT_RETRY_POLICY, attempt, () => 1);
    expect([1, 2, 3, 4].map(high)).toEqual([30, 60, 120, 240]);
    expect([1, 2, 3, 4].map(low)).toEqual([15, 30, 60, 120]);
    expect(high(8)).toBe(3600);
    expect(high(40)).toBe(3600);
    expect(low(40)).toBe(1800);
  });

  it('gives up after about a day: 30 to 55 attempts', () => {
    for (const random of [() => 0, () => 1]) {
      let elapsed = 0;
      let attempts = 1;
      for (;;) {
        const wait = backoffSeconds(DEFAULT_RETRY_POLICY, attempts, random);
        if (elapsed + wait > DEFAULT_RETRY_POLICY.giveUpAfterSeconds) break;
        elapsed += wait;
        attempts++;
      }
      expect(attempts).toBeGreaterThanOrEqual(30);
      expect(attempts).toBeLessThanOrEqual(55);
    }
  });

  it("waits at least the endpoint's Retry-After, and plans nothing past the give-up limit", () => {
    const now = Date.parse('2026-01-01T12:00:00Z');
    const created = new Date(now - 1000);
    expect(nextAttemptDelay(DEFAULT_RETRY_POLICY, 1, null, created, now, () => 1)).toBe(30);
    expect(nextAttemptDelay(DEFAULT_RETRY_POLICY, 1, 600, created, now, () => 1)).toBe(600);
    const almostADayAgo = new Date(now - (DEFAULT_RETRY_POLICY.giveUpAfterSeconds - 20) * 1000);
    expect(nextAttemptDelay(DEFAULT_RETRY_POLICY, 1, null, almostADayAgo, now, () => 1)).toBeNull();
    expect(nextAttemptDelay(DEFAULT_RETRY_POLICY, 1, null, almostADayAgo, now, () => 0)).toBe(15);
  });

  it('takes PAYMENT_RETRY_BASE_SECONDS and refuses nonsense', () => {
    expect(loadConfig({}).paymentRetryBaseSeconds).toBe(30);
    expect(loadConfig({ PAYMENT_RETRY_BASE_SECONDS: '0.5' }).paymentRetryBaseSeconds).toBe(0.5);
    for (const bad of ['0', '-1', 'soon', '100000', '1e3']) {
      expect(() => loadConfig({ PAYMENT_RETRY_BASE_SECONDS: bad })).toThrow(/PAYMENT_RETRY_BASE_SECONDS/);
    }
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterSeconds('120', now)).toBe(120);
    expect(retryAfterSeconds('Thu, 01 Jan 2026 00:01:30 GMT', now)).toBe(90);
    expect(retryAfterSeconds('Wed, 31 Dec 2025 00:00:00 GMT', now)).toBe(0);
    expect(retryAfterSeconds('soon', now)).toBeNull();
    expect(retryAfterSeconds(undefined, now)).toBeNull();
  });
});

describe('Standard Webhooks signature', () => {
  const secrets = ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'whsec_dGhpcyBpcyBhIHNlY29uZCBzZWNyZXQ='];

  it('verifies with the standardwebhooks library, for each secret', () => {
    const body = JSON.stringify({ type: 'payment.requested', amount: '100.00' });
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = {
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader(secrets, 'msg_1', timestamp, body),
    };
    for (const secret of secrets) expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(secrets[0]).verify(`${body} `, headers)).toThrow();
  });

  it("matches the specification's example", () => {
    // From the Standard Webhooks specification and its reference libraries' tests.
    const signature = signatureHeader(
      ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
      'msg_p5jXN8AQM9LWM0D4loKWxJek',
      1614265330,
      '{"test": 2432232314}',
    );
    expect(signature).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });
});

describe('SSRF guard', () => {
  it.each([
    // IPv4: private, loopback, link-local (cloud metadata), shared, "this network"
    '127.0.0.1',
    '127.9.9.9',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '100.127.255.255',
    '0.0.0.0',
    '0.1.2.3',
    // IPv4: documentation (TEST-NET-1/2/3), benchmarking, IETF protocol, 6to4 relay, AS112, AMT
    '192.0.2.1',
    '198.51.100.7',
    '203.0.113.200',
    '198.18.0.1',
    '198.19.255.254',
    '192.0.0.9',
    '192.0.0.170',
    '192.88.99.1',
    '192.31.196.1',
    '192.175.48.1',
    '192.52.193.1',
    // IPv4: multicast, reserved, broadcast
    '224.0.0.1',
    '239.255.255.250',
    '240.0.0.1',
    '255.255.255.255',
    // IPv6: loopback, unspecified, link-local (with a zone), unique local, site-local, multicast
    '::1',
    '::',
    'fe80::1',
    'fe80::1%eth0',
    'fc00::1',
    'fd12:3456::1',
    'fec0::1',
    'feff::1',
    'ff02::1',
    'ff0e::1',
    // IPv6 with IPv4 inside: mapped, compatible, translated, NAT64, 6to4, Teredo
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.0.0.1',
    '::ffff:169.254.169.254',
    '::127.0.0.1',
    '::7f00:1',
    '::8.8.8.8',
    '::ffff:0:7f00:1',
    '64:ff9b::7f00:1',
    '64:ff9b::127.0.0.1',
    '64:ff9b::a9fe:a9fe',
    '64:ff9b::c000:201',
    '64:ff9b:1::808:808',
    '2002:7f00:1::',
    '2002:808:808::1',
    '2001::1',
    '2001:0:4136:e378:8000:63bf:3fff:fdd2',
    // IPv6: documentation, benchmarking, ORCHID, AMT, AS112, discard, segment routing, unassigned
    '2001:db8::1',
    '3fff::1',
    '2001:2::1',
    '2001:10::1',
    '2001:20::1',
    '2001:3::1',
    '2001:4:112::1',
    '2620:4f:8000::1',
    '100::1',
    '5f00::1',
    '4000::1',
    'c000::1',
    // Not addresses at all
    'localhost',
    '',
    '1.2.3',
  ])('treats %s as non-public', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.215.14',
    '172.32.0.1',
    '100.128.0.1',
    '192.0.3.1',
    '198.20.0.1',
    '223.255.255.254',
    '::ffff:8.8.8.8',
    // NAT64 of a public IPv4 address, as a DNS64 resolver answers on an IPv6-only network
    '64:ff9b::808:808',
    '2606:4700:4700::1111',
    '2a00:1450:4001::200e',
    '2001:4860:4860::8888',
  ])('treats %s as public', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  it.each([
    'http://[64:ff9b::7f00:1]/',
    'http://[2002:7f00:1::]/',
    'http://[::127.0.0.1]/',
    'http://[fec0::1]/',
    'http://192.0.2.1/',
    'http://0x7f.1/',
  ])('refuses the endpoint %s before connecting', async (endpoint) => {
    await expect(resolveEndpoint(new URL(endpoint), false)).rejects.toThrow(/non-public address/);
  });

  it('refuses a host resolving to loopback unless private endpoints are allowed', async () => {
    await expect(resolveEndpoint(new URL('http://localhost:9/'), false)).rejects.toThrow(/non-public address/);
    await expect(resolveEndpoint(new URL('http://[::1]:9/'), false)).rejects.toThrow(/non-public address ::1/);
    await expect(resolveEndpoint(new URL('http://127.0.0.1:9/'), true)).resolves.toEqual([
      { address: '127.0.0.1', family: 4 },
    ]);
  });

  it('answers lookups with the checked addresses only', () => {
    const lookup = pinnedLookup([
      { address: '93.184.215.14', family: 4 },
      { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
    ]);
    const answers: unknown[] = [];
    lookup('example.com', { all: true }, (_error, addresses) => answers.push(addresses));
    lookup('example.com', { family: 6 }, (_error, address, family) => answers.push([address, family]));
    expect(answers).toEqual([
      [
        { address: '93.184.215.14', family: 4 },
        { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
      ],
      ['2606:2800:21f:cb07:6820:80da:af6b:8b2c', 6],
    ]);
  });
});
