// SSRF guard for tenants' payment endpoints (DECISIONS §7): the host name is resolved once, every
// address it resolves to must be public, and the connection then goes to exactly those addresses
// (a pinned `lookup`), so a second, different DNS answer cannot slip a private address in.
import type { LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/** The endpoint may not be called: final, never retried. */
export class EndpointRefusedError extends Error {}

const NON_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata services live here)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['100::', 64], // discard
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv6');
}
// IPv4-mapped IPv6 addresses (::ffff:127.0.0.1, ::ffff:7f00:1) are judged by the IPv4 rules: BlockList does that itself.

/** Whether an IP address is a public unicast address. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  return family !== 0 && !NON_PUBLIC.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * The addresses to connect to for `url`: all of its host's addresses, each checked unless
 * `allowPrivate`. DNS failures are thrown as they come (worth retrying); a private address is an
 * EndpointRefusedError.
 */
export async function resolveEndpoint(url: URL, allowPrivate: boolean): Promise<LookupAddress[]> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const addresses = isIP(host)
    ? [{ address: host, family: isIP(host) }]
    : await lookup(host, { all: true, verbatim: true });
  if (!allowPrivate) {
    const refused = addresses.find((entry) => !isPublicAddress(entry.address));
    if (refused) {
      throw new EndpointRefusedError(`payment endpoint host ${host} resolves to non-public address ${refused.address}`);
    }
  }
  return addresses;
}

/** A `lookup` for node's http(s) that answers with the already checked addresses only. */
export function pinnedLookup(addresses: LookupAddress[]): LookupFunction {
  return ((_hostname: string, options: { family?: number | string; all?: boolean }, callback: Function) => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : Number(options.family) || 0;
    const candidates = family ? addresses.filter((entry) => entry.family === family) : addresses;
    if (candidates.length === 0) {
      callback(Object.assign(new Error(`no IPv${family} address for the payment endpoint`), { code: 'ENOTFOUND' }));
    } else if (options.all) {
      callback(null, candidates);
    } else {
      callback(null, candidates[0].address, candidates[0].family);
    }
  }) as LookupFunction;
}
