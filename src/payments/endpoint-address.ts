// SSRF guard for tenants' payment endpoints (DECISIONS §7): the host name is resolved once, every
// address it resolves to must be public, and the connection then goes to exactly those addresses
// (a pinned `lookup`), so a second, different DNS answer cannot slip a private address in.
import type { LookupAddress, LookupOptions } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/** The endpoint may not be called: final, never retried. */
export class EndpointRefusedError extends Error {}

// ipaddr.js names every range of the IANA IPv4 and IPv6 special-purpose registries (and a few
// more: site-local, 6to4 relays); whatever it calls `unicast` is an ordinary address.
/** Global unicast space (2000::/3): every other IPv6 address is unassigned or special. */
const IPV6_GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');
/**
 * IPv6 ranges that carry an IPv4 address the connection really goes to, judged by that address:
 * IPv4-mapped (::ffff:a.b.c.d) and the NAT64 well-known prefix (64:ff9b::/96, RFC 6052), which
 * DNS64 resolvers synthesise for public IPv4 hosts on IPv6-only networks. Every other range with
 * IPv4 inside (6to4, Teredo, IPv4-compatible ::a.b.c.d, local-use NAT64 64:ff9b:1::/48, IPv4-
 * translated) is refused outright: where it leads depends on relays the service does not control.
 */
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR('64:ff9b::/96');

function isPublicIPv4(address: ipaddr.IPv4): boolean {
  return address.range() === 'unicast';
}

function isPublicIPv6(address: ipaddr.IPv6): boolean {
  if (address.isIPv4MappedAddress()) return isPublicIPv4(address.toIPv4Address());
  if (address.match(NAT64_WELL_KNOWN)) {
    return isPublicIPv4(new ipaddr.IPv4(address.toByteArray().slice(12)));
  }
  return address.match(IPV6_GLOBAL_UNICAST) && address.range() === 'unicast';
}

/**
 * An IPv6 address in the form node connects to: `::127.0.0.1` is IPv4-compatible (::7f00:1), which
 * ipaddr.js would read as IPv4-mapped. A zone (`%eth0`) only ever follows link-local addresses.
 */
function canonicalIPv6(address: string): string {
  const withoutZone = address.replace(/%.*$/, '');
  return new URL(`http://[${withoutZone}]/`).hostname.slice(1, -1);
}

/** Whether an IP address is a public unicast address: none of the special-purpose ranges. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return isPublicIPv4(ipaddr.IPv4.parse(address));
  if (family === 6) return isPublicIPv6(ipaddr.IPv6.parse(canonicalIPv6(address)));
  return false;
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

/** A lookup's callback, called on a failure with the error alone, as dns.lookup does (node's type wants an address). */
type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address?: string | LookupAddress[],
  family?: number,
) => void;

/** A `lookup` for node's http(s) that answers with the already checked addresses only. */
export function pinnedLookup(addresses: LookupAddress[]): LookupFunction {
  return ((_hostname: string, options: LookupOptions, callback: LookupCallback) => {
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
