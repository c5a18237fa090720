/** A plain rhea client below the SDK, authenticated on `$cbs` with a SAS token, for checking bytes on the wire. */
import rhea from 'rhea';
import { createSasToken } from '@jobq/servicebus-emulator';

export interface RawKey {
  keyName: string;
  key: string;
}

export async function rawConnection(port: number, entity: string, key: RawKey): Promise<rhea.Connection> {
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

/** Receives one message (receive-and-delete) and returns its AMQP body section as rhea decodes it. */
export function receiveRaw(connection: rhea.Connection, address: string): Promise<rhea.Message> {
  return new Promise((resolve) => {
    const receiver = connection.open_receiver({ source: { address }, autoaccept: true, rcv_settle_mode: 0, snd_settle_mode: 1, credit_window: 1 });
    receiver.once('message', (ctx: rhea.EventContext) => {
      receiver.close();
      resolve(ctx.message!);
    });
  });
}

/** Sends one message as given (e.g. a data section built with `rhea.message.data_section`). */
export function sendRaw(connection: rhea.Connection, address: string, message: rhea.Message): Promise<void> {
  return new Promise((resolve, reject) => {
    const sender = connection.open_sender({ target: { address } });
    sender.once('sendable', () => {
      const delivery = sender.send(message);
      void delivery;
    });
    sender.once('accepted', () => {
      sender.close();
      resolve();
    });
    sender.once('rejected', () => reject(new Error('rejected')));
  });
}

export function closeRaw(connection: rhea.Connection): Promise<void> {
  return new Promise((resolve) => {
    connection.once('connection_close', () => resolve());
    connection.once('disconnected', () => resolve());
    connection.close();
  });
}
