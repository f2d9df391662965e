// Connection URLs that name a Unix socket directory the way libpq does (`?host=/dir`), as the
// embedded server's do: psql and pg_dump read them as they are, postgres.js needs the socket's path.

/** postgres.js's URL and `path` option for `url`. */
export function postgresConnection(url: string): { url: string; path?: string } {
  const parsed = new URL(url);
  const socketDir = parsed.searchParams.get('host');
  if (!socketDir?.startsWith('/')) return { url };
  parsed.searchParams.delete('host');
  return { url: parsed.toString(), path: `${socketDir}/.s.PGSQL.${parsed.port || 5432}` };
}
