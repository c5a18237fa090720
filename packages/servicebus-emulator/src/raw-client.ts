/** A plain `rhea` client below the SDK, for tests that check what the broker does with raw AMQP frames. */
import rhea from 'rhea';
import { createSasToken } from './sas';

/** A SAS key name and key; the default is the emulator's development key. */
export interface RawClientKey {
  keyName: string;
  key: string;
}

const DEV_KEY: RawClientKey = { keyName: 'RootManageSharedAccessKey', key: 'SAS_KEY_VALUE' };

/**
 * Connects to the broker on 127.0.0.1:`port` and puts a SAS token for `entity` on `$cbs`;
 * resolves once the broker accepted it (202), rejects with its status otherwise.
 */
export async function connectRawClient(port: number, entity: string, key: RawClientKey = DEV_KEY): Promise<rhea.Connection> {
  const connection = rhea.create_container().connect({ port, host: '127.0.0.1', reconnect: false });
  await new Promise<void>((resolve, reject) => {
    connection.once('connection_open', () => {
      const replies = connection.open_receiver({ source: { address: '$cbs' }, name: 'cbs-reply' });
      replies.on('message', (ctx: rhea.EventContext) => {
        const status: unknown = (ctx.message?.application_properties as Record<string, unknown> | undefined)?.['status-code'];
        if (status === 202) resolve();
        else reject(new Error(`$cbs answered ${String(status)}`));
      });
      const cbs = connection.open_sender('$cbs');
      cbs.once('sendable', () => {
        const audience = `sb://127.0.0.1:${port}/${entity}`;
        cbs.send({
          message_id: 'put-1',
          reply_to: 'cbs-reply',
          application_properties: { operation: 'put-token', type: 'servicebus.windows.net:sastoken', name: audience },
          body: createSasToken(audience, key, Date.now() + 60_000),
        });
      });
    });
  });
  return connection;
}

/** Closes a raw client connection; resolves once it is closed or gone. */
export function closeRawClient(connection: rhea.Connection): Promise<void> {
  return new Promise((resolve) => {
    connection.once('connection_close', () => resolve());
    connection.once('disconnected', () => resolve());
    connection.close();
  });
}
