// A Redis server of the test's own, on a free port, that the test may stop (SIGSTOP) and resume:
// never the shared one, which other tests and processes use.
import { type ChildProcess, spawn } from 'node:child_process';
import { freePort } from './free-port.js';

export interface PrivateRedis {
  url: string;
  /** SIGSTOP: the connection stays open and nothing answers, as with a hung server or a lost network. */
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise<void>((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${output}`)));
  });
  child.stdout!.resume();
  return {
    url: `redis://127.0.0.1:${port}`,
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGCONT');
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
