// Connection URLs as libpq reads them, for postgres.js: a Unix socket directory (`?host=/dir`), as
// the embedded server's name, and several hosts (`postgres://u@h1:5432,h2:5432/db`), of which the
// service uses the one that accepts writes (DECISIONS section 11).

/** The hosts (`host:port`) of a URL's authority, one or several; empty when it names none. */
export function hostsOf(url: string): string[] {
  const authority = url.slice(url.indexOf('://') + 3).split(/[/?#]/)[0]!;
  const hosts = authority.slice(authority.lastIndexOf('@') + 1);
  return hosts === '' ? [] : hosts.split(',');
}

/** `url` parsed as a WHATWG URL, its host the first it names (the URL class takes one). */
export function parseDatabaseUrl(url: string): URL {
  const hosts = hostsOf(url);
  if (hosts.length < 2) return new URL(url);
  const parsed = new URL(url.replace(hosts.join(','), hosts[0]!));
  for (const host of hosts.slice(1)) new URL(`postgres://${host}`); // each host a valid one, else TypeError
  return parsed;
}

/**
 * postgres.js's URL and options for `url`. With several hosts, only a server that accepts writes
 * is kept (`target_session_attrs=read-write`, the default then): postgres.js 3 judges read-write
 * by the `default_transaction_read_only` a server reports, which a hot standby reports off, so the
 * service asks it for a server not in recovery (`primary`), what read-write means for a standby.
 */
export function postgresConnection(url: string): { url: string; path?: string; target_session_attrs?: 'primary' } {
  const parsed = parseDatabaseUrl(url);
  if (hostsOf(url).length > 1) {
    const attrs = parsed.searchParams.get('target_session_attrs') ?? 'read-write';
    if (attrs !== 'read-write') return { url };
    return { url, target_session_attrs: 'primary' };
  }
  const socketDir = parsed.searchParams.get('host');
  if (!socketDir?.startsWith('/')) return { url };
  parsed.searchParams.delete('host');
  return { url: parsed.toString(), path: `${socketDir}/.s.PGSQL.${parsed.port || 5432}` };
}
