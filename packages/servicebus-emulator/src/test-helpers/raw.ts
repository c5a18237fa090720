/** A plain rhea client that has put a SAS token on `$cbs`, for tests below the SDK. */
import type rhea from 'rhea';
import { closeRawClient, connectRawClient } from '../raw-client';

export function rawClient(port: number, entity: string): Promise<rhea.Connection> {
  return connectRawClient(port, entity);
}

export const closeRaw = closeRawClient;
