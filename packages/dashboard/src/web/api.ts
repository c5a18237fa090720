import type { ApiError } from '../api-types';

/** An answer other than 2xx, or no answer: `status` 0 when the server could not be reached. */
export class FetchError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function request(path: string, signal?: AbortSignal): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(path, { ...(signal !== undefined ? { signal } : {}), headers: { accept: 'application/json, text/plain' } });
  } catch (err) {
    if (signal?.aborted) throw err;
    throw new FetchError(0, 'the dashboard server does not answer');
  }
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    try {
      const body = (await res.json()) as Partial<ApiError>;
      if (body.error?.message) message = body.error.message;
    } catch {
      // not JSON: keep the status line
    }
    throw new FetchError(res.status, message);
  }
  return res;
}

/** GET a JSON route of the dashboard server. */
export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  return (await (await request(path, signal)).json()) as T;
}

/** GET a text route (logs) with its headers. */
export async function getText(path: string, signal?: AbortSignal): Promise<{ text: string; headers: Headers }> {
  const res = await request(path, signal);
  return { text: await res.text(), headers: res.headers };
}

/** `/api/workflows/ID/…` with the query. */
export function workflowApi(id: string, sub = '', query: Record<string, string | number | undefined> = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') q.set(k, String(v));
  const qs = q.toString();
  return `/api/workflows/${encodeURIComponent(id)}${sub ? `/${sub}` : ''}${qs ? `?${qs}` : ''}`;
}
