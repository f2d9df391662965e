// partnerctl's client of the admin API.
import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';

export class CliError extends Error {}

interface AdminClientOptions {
  url: string;
  token: string;
}

export class AdminClient {
  constructor(private readonly options: AdminClientOptions) {}

  /** The answer's JSON, as `T`: the fields the caller reads, which nothing checks. */
  async request<T = unknown>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<T> {
    const response = await this.send(method, path, body, { accept: 'application/json', ...headers });
    const text = await response.text();
    return (text ? JSON.parse(text) : null) as T;
  }

  /** Saves the answer's body into `file` as it arrives; its size in bytes. */
  async download(method: string, path: string, file: string): Promise<number> {
    const response = await this.send(method, path);
    let bytes = 0;
    const body = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
    body.on('data', (chunk: Buffer) => (bytes += chunk.length));
    await pipeline(body, createWriteStream(file, { mode: 0o600 }));
    return bytes;
  }

  /** The answer when it is a success; a CliError naming the API's error otherwise. */
  private async send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    let response: Response;
    try {
      response = await fetch(`${this.options.url.replace(/\/+$/, '')}/admin/v1${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.options.token}`,
          ...(body !== undefined && { 'content-type': 'application/json' }),
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (error) {
      const reason = (error as Error & { cause?: Error }).cause?.message ?? (error as Error).message;
      throw new CliError(`cannot reach the admin API at ${this.options.url}: ${reason}`);
    }
    if (response.ok) return response;
    const text = await response.text();
    let error: { code?: string; message?: string; details?: { field: string; message: string }[] } | undefined;
    try {
      error = JSON.parse(text)?.error;
    } catch {
      error = undefined;
    }
    const details = Array.isArray(error?.details)
      ? error.details.map((detail) => `\n  ${detail.field}: ${detail.message}`).join('')
      : '';
    throw new CliError(
      `${response.status} ${error?.code ?? ''} ${error?.message ?? text}${details}`.replace(/\s+\n/g, '\n'),
    );
  }
}
