/** A plain rhea client that has put a SAS token on `$cbs`, for tests below the SDK. */
import rhea from 'rhea';
import { createSasToken } from '../sas';

export async function rawClient(port: number, entity: string): Promise<rhea.Connection> {
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
          body: createSasToken(audience, { keyName: 'RootManageSharedAccessKey', key: 'SAS_KEY_VALUE' }, Date.now() + 60_000),
        });
      });
    });
  });
  return connection;
}

export function closeRaw(connection: rhea.Connection): Promise<void> {
  return new Promise((resolve) => {
    connection.once('connection_close', () => resolve());
    connection.once('disconnected', () => resolve());
    connection.close();
  });
}
