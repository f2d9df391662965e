// partnerctl's client of the admin API.
export class CliError extends Error {}

interface AdminClientOptions {
  url: string;
  token: string;
}

export class AdminClient {
  constructor(private readonly options: AdminClientOptions) {}

  async request<T = any>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<T> {
    let response: Response;
    try {
      response = await fetch(`${this.options.url.replace(/\/+$/, '')}/admin/v1${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.options.token}`,
          accept: 'application/json',
          ...(body !== undefined && { 'content-type': 'application/json' }),
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (error) {
      const reason = (error as Error & { cause?: Error }).cause?.message ?? (error as Error).message;
      throw new CliError(`cannot reach the admin API at ${this.options.url}: ${reason}`);
    }
    const text = await response.text();
    const payload = text ? JSON.parse(text) : null;
    if (!response.ok) {
      const error = payload?.error;
      const details = Array.isArray(error?.details)
        ? error.details
            .map((detail: { field: string; message: string }) => `\n  ${detail.field}: ${detail.message}`)
            .join('')
        : '';
      throw new CliError(
        `${response.status} ${error?.code ?? ''} ${error?.message ?? text}${details}`.replace(/\s+\n/g, '\n'),
      );
    }
    return payload as T;
  }
}
