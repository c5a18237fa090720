/** A plain rhea client below the SDK, authenticated on `$cbs` with a SAS token, for checking bytes on the wire. */
import rhea from 'rhea';
import { closeRawClient, connectRawClient, type RawClientKey } from '@jobq/servicebus-emulator';

export type RawKey = RawClientKey;

export function rawConnection(port: number, entity: string, key: RawKey): Promise<rhea.Connection> {
  return connectRawClient(port, entity, key);
}

/** Receives one message (receive-and-delete) and returns its AMQP body section as rhea decodes it. */
export function receiveRaw(connection: rhea.Connection, address: string): Promise<rhea.Message> {
  return new Promise((resolve) => {
    const receiver = connection.open_receiver({
      source: { address },
      autoaccept: true,
      rcv_settle_mode: 0,
      snd_settle_mode: 1,
      credit_window: 1,
    });
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

export const closeRaw = closeRawClient;
