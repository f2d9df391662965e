// A listener on port 0: its port is chosen before the hosts are built and held until its host listens.
import { createServer } from 'node:net';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { HeldPort } from '../../src/http/held-port.js';
import type { HostApp } from '../../src/http/host.js';

/** Whether another socket can listen on `port` now: 'listening' or the error's code. */
async function listenAgain(port: number): Promise<string> {
  const other = createServer();
  try {
    await new Promise<void>((resolve, reject) => other.once('error', reject).listen(port, '127.0.0.1', resolve));
    return 'listening';
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? String(error);
  } finally {
    if (other.listening) await new Promise((resolve) => other.close(resolve));
  }
}

describe('HeldPort', () => {
  it('keeps its port from everyone else until its host listens on it, and the host answers there', async () => {
    const held = await HeldPort.on('127.0.0.1');
    expect(await listenAgain(held.port)).toBe('EADDRINUSE');
    const app = Fastify();
    app.get('/', async () => ({ here: true }));
    const url = await held.listen(app as unknown as HostApp);
    try {
      expect(url).toBe(`http://127.0.0.1:${held.port}`);
      expect(await (await fetch(url)).json()).toEqual({ here: true });
      expect(await listenAgain(held.port)).toBe('EADDRINUSE');
      await held.release();
      expect(await (await fetch(url)).json()).toEqual({ here: true });
    } finally {
      await app.close();
    }
    expect(await listenAgain(held.port)).toBe('listening');
  });

  it('lets go of its port when no host took it over', async () => {
    const held = await HeldPort.on('127.0.0.1');
    await held.release();
    expect(await listenAgain(held.port)).toBe('listening');
  });
});
