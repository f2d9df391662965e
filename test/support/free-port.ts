// Ports for servers a test starts on a port it must know before they listen (nginx's upstreams,
// PgBouncer, a PostgreSQL cluster, Redis), and may start again on the same one.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Below the kernel's range of ports for outgoing connections, but clear of the well-known ones. */
const LOWEST = 10_000;
/** Where the kernel's range of ports for outgoing connections starts (Linux's default when unreadable). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > LOWEST + 1000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

const handedOut = new Set<number>();

const listensFreely = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

/**
 * A loopback TCP port nobody listens on at the time of asking, and that nothing takes before the
 * test's server does: outside the kernel's range for outgoing connections (one of those, any
 * process's, took a port the kernel had just handed out for listening: EADDRINUSE in CI), and
 * never handed out twice by this process.
 */
export async function freePort(): Promise<number> {
  const high = ephemeralLow();
  for (;;) {
    const port = LOWEST + Math.floor(Math.random() * (high - LOWEST));
    if (handedOut.has(port) || !(await listensFreely(port))) continue;
    handedOut.add(port);
    return port;
  }
}
