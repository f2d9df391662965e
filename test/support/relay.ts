// A TCP relay to a PostgreSQL server (over TCP or its Unix socket) that a test can cut (connections
// dropped, new ones refused), hang (nothing passes either way, as with a server stopped by SIGSTOP)
// and restore: an outage of the database as the service sees it, on either engine.
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { postgresConnection } from '../../src/db/url.js';

export class Relay {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private hung = false;
  port = 0;

  /** `target`: the PostgreSQL URL the relay forwards to. */
  constructor(private readonly target: string) {}

  /** `target` as reached through the relay. */
  get url(): string {
    const url = new URL(this.target);
    url.searchParams.delete('host');
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    return url.toString();
  }

  async open(): Promise<void> {
    const { url, path } = postgresConnection(this.target);
    const { hostname, port } = new URL(url);
    this.server = createServer((client) => {
      const upstream = path ? connect(path) : connect(Number(port || 5432), hostname);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
      // After pipe, which sets its source flowing.
      if (this.hung) for (const socket of [client, upstream]) socket.pause();
    });
    this.server.listen(this.port, '127.0.0.1');
    await once(this.server, 'listening');
    this.port = (this.server.address() as { port: number }).port;
  }

  /** Connections dropped, new ones refused, until `open`. */
  async cut(): Promise<void> {
    const server = this.server!;
    this.server = null;
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  }

  /** Nothing passes, on open connections and new ones, until `resume`. */
  hang(): void {
    this.hung = true;
    for (const socket of this.sockets) socket.pause();
  }

  resume(): void {
    this.hung = false;
    for (const socket of this.sockets) socket.resume();
  }
}
