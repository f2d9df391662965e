// A listener configured with port 0 gets a port the system chooses. Its URL must be known before
// the hosts are built (public URLs, notify_url), so the port is chosen first; a port found free,
// let go and listened on later was now and then taken in between by another process or an
// outgoing connection (EADDRINUSE at start). The socket is therefore held, listening, from the
// moment the port is chosen until its host takes it over.
import { createServer, type Server } from 'node:net';
import type { FastifyListenOptions } from 'fastify';
import { type HostApp, listenerUrl } from './host.js';

export class HeldPort {
  private handedOver = false;

  private constructor(
    private readonly socket: Server,
    readonly host: string,
    readonly port: number,
  ) {}

  /** A socket listening on a port of `host` the system chose. */
  static async on(host: string): Promise<HeldPort> {
    const socket = createServer();
    await new Promise<void>((resolve, reject) => socket.once('error', reject).listen(0, host, resolve));
    const address = socket.address();
    if (!address || typeof address === 'string') throw new Error(`no port was chosen on ${host}`);
    return new HeldPort(socket, host, address.port);
  }

  /** `app` listening on the held socket, which is the app's from then on (closed with it); its URL. */
  async listen(app: HostApp): Promise<string> {
    if (this.handedOver) throw new Error(`port ${this.port} was handed over already`);
    this.handedOver = true;
    // Node listens on an existing socket given as `handle` (the handle form of server.listen, whose
    // documentation names a server's `_handle`); Fastify hands its options to server.listen as given.
    const handle = (this.socket as Server & { _handle: unknown })._handle;
    await app.listen({ host: this.host, port: this.port, handle } as FastifyListenOptions);
    return listenerUrl(app);
  }

  /** Lets go of the port when no app took it over (a start that failed before listening). */
  async release(): Promise<void> {
    if (this.handedOver || !this.socket.listening) return;
    await new Promise((resolve) => this.socket.close(resolve));
  }
}
