import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '@jobq/ports';
import type { DashboardOptions } from './server';
import { sendError } from './http-util';

/** The `/api/…` routes (packages/dashboard/README.md#api). */
export class Api {
  constructor(private readonly options: DashboardOptions & { clock: Clock }) {}

  async handle(req: IncomingMessage, res: ServerResponse, path: string, _query: URLSearchParams): Promise<void> {
    await Promise.resolve();
    sendError(res, req, 404, 'not-found', `no API route ${path.slice(0, 200)}`);
  }

  close(): void {}
}
