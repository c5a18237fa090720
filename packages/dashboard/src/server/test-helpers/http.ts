import { request } from 'node:http';

/** One answer, read whole. */
export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A raw request to the dashboard (any method, any Host header), read whole. */
export function get(url: string, options: { method?: string; host?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: target.hostname, port: target.port, path: `${target.pathname}${target.search}`, method: options.method ?? 'GET', headers: { ...(options.host !== undefined ? { Host: options.host } : {}), ...options.headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The answer's JSON. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read what they check
export function json<T = any>(answer: Answer): T {
  return JSON.parse(answer.body) as T;
}
