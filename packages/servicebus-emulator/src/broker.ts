/**
 * The AMQP 1.0 side of the emulator on `rhea`: connections, CBS, sender and receiver links on
 * queues and dead-letter queues, link dispositions, `$management` request/response links, limits
 * and fault injection. See README.md.
 */
import type { Server, Socket } from 'node:net';
import rhea from 'rhea';
import type * as Rhea from 'rhea';
import { parseAddress, entityPath, type Address } from './address';
import {
  acceptedState,
  asString,
  BATCH_FORMAT,
  decodeMessage,
  encodeMessage,
  field,
  plainMap,
  rejectedState,
  settledState,
  toBuffer,
  unpackBatch,
  type AmqpError,
  type AmqpMessage,
} from './amqp';
import { handlePutToken, type CbsKey } from './cbs';
import { errorText } from './error-text';
import { errorReply, handleManagement, replyMessage, type ManagementReply } from './management';
import type { ServiceBusLimits } from './profile';
import { BrokerError, deliveredMessage, LOCK_LOST, type Outcome, type Queue, type SubQueue } from './queue';
import type { BrokerRegistry } from './registry';
import { QueueRegistryError } from './types';

/** Operations a fault can be injected into with `failNext`. */
export type FaultOperation = 'send' | 'settle' | 'management' | 'cbs' | 'attach';

interface ConnectionState {
  connection: Rhea.Connection;
  authorized: boolean;
  /** Opened past the connection limit: every link attach is refused. */
  overLimit: boolean;
  replyLinks: Map<string, Rhea.Sender>;
}

/** A receiver of the client's: messages flow from a queue to it over our sender link. */
interface DeliveryLink {
  kind: 'deliver';
  sender: Rhea.Sender;
  sub: SubQueue;
  mode: 'peekLock' | 'receiveAndDelete';
  /**
   * Ids of deliveries handed to rhea and not yet written: rhea takes credit only when it writes a
   * transfer, which waits while the client's session window is full.
   */
  unwritten: number[];
}

/** A sender of the client's, on our receiver link. */
type IncomingLink =
  | { kind: 'cbs'; state: ConnectionState }
  | { kind: 'ingest'; queue: Queue }
  | { kind: 'management'; sub: SubQueue; state: ConnectionState };

export interface BrokerOptions {
  registry: BrokerRegistry;
  limits: ServiceBusLimits;
  key: CbsKey;
  autoCreateQueues: boolean;
  now: () => number;
}

const RECEIVE_AND_DELETE = 1;

export class Broker {
  private readonly container = rhea.create_container({ id: 'jobq-servicebus-emulator' });
  private readonly connections = new Map<Rhea.Connection, ConnectionState>();
  private readonly sockets = new Set<Socket>();
  private readonly deliveryLinks = new Map<SubQueue, Set<DeliveryLink>>();
  private readonly senders = new WeakMap<Rhea.Sender, DeliveryLink>();
  private readonly receivers = new WeakMap<Rhea.Receiver, IncomingLink>();

  private readonly faults = new Map<FaultOperation, string[]>();
  private readonly pumping = new Set<SubQueue>();
  private server: Server | undefined;
  private timer: NodeJS.Timeout | undefined;
  cbsPuts = 0;

  constructor(private readonly options: BrokerOptions) {
    const registry = options.registry;
    registry.onCreate = (q) => this.wire(q);
    registry.onDelete = (q) => this.unwire(q);
    for (const q of registry.allQueues()) this.wire(q);
    this.listen();
  }

  get openConnections(): number {
    return this.connections.size;
  }

  start(port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const server = this.container.listen({
        port,
        host: '127.0.0.1',
        autoaccept: false,
        treat_modified_as_released: false,
      } as Rhea.ServerConnectionOptions);
      this.server = server;
      server.on('connection', (socket: Socket) => {
        this.sockets.add(socket);
        // No Nagle: with it, a transfer written after an unacknowledged one waits for the client's
        // delayed ACK (about 40 ms), which made a receive of 32 waiting messages take ~45 ms.
        socket.setNoDelay(true);
        socket.on('close', () => {
          this.sockets.delete(socket);
          // rhea learns of a peer's end, not of a socket closed here: tell it, or its heartbeat timers live on.
          for (const connection of [...this.connections.keys()]) {
            if ((connection as unknown as { socket?: Socket }).socket === socket) disconnect(connection);
          }
        });
      });
      server.once('error', (err: NodeJS.ErrnoException) => {
        const reason = err.code === 'EADDRINUSE' ? 'the port is already in use' : err.message;
        reject(new Error(`the Service Bus emulator cannot listen on 127.0.0.1:${port}: ${reason}`));
      });
      server.once('listening', () => {
        // Errors after the start (a failing accept, say) must not go unhandled.
        server.on('error', (err: Error) => this.unexpected('the listening socket', err));
        const address = server.address();
        this.timer = setInterval(() => this.sweep(), 50);
        this.timer.unref();
        resolve(typeof address === 'object' && address ? address.port : port);
      });
    });
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    // The server's close callback runs before the sockets' 'close' events: tell rhea of every
    // connection's end here, or its heartbeat timers keep the process alive (README, "Broker API").
    for (const connection of [...this.connections.keys()]) disconnect(connection);
    this.sockets.clear();
    this.connections.clear();
  }

  failNext(op: FaultOperation, condition: string): void {
    const list = this.faults.get(op) ?? [];
    list.push(condition);
    this.faults.set(op, list);
  }

  private fault(op: FaultOperation): AmqpError | undefined {
    const condition = this.faults.get(op)?.shift();
    if (condition === undefined) return undefined;
    return { condition, description: `injected fault on ${op}: ${condition}` };
  }

  /** Closes every client connection's socket (clients reconnect; locks stay until they expire). */
  dropConnections(): void {
    for (const socket of this.sockets) socket.resetAndDestroy();
  }

  /** Detaches every receiver link with `amqp:link:detach-forced`. */
  detachReceivers(): void {
    for (const links of this.deliveryLinks.values()) {
      for (const link of links)
        link.sender.close({ condition: 'amqp:link:detach-forced', description: 'the receiver was detached by the emulator' });
    }
  }

  /** Expired locks, expired messages and due scheduled messages of every queue; never throws. */
  sweep(): void {
    for (const q of this.options.registry.allQueues()) {
      try {
        q.sweep();
      } catch (err) {
        this.unexpected('sweep', err);
      }
    }
  }

  private readonly reported = new Set<string>();

  /**
   * A fault of the emulator's own where no caller can take it (timers, rhea's event handlers):
   * written to stderr once per place, never thrown, so the process lives on (README, "What the broker does").
   */
  private unexpected(where: string, err: unknown): void {
    if (this.reported.has(where)) return;
    this.reported.add(where);
    const detail = errorText(err);
    process.stderr.write(`jobq-servicebus-emulator: unexpected error in ${where} (reported once): ${detail.slice(0, 500)}\n`);
  }

  private wire(q: Queue): void {
    for (const sub of [q.main, q.deadLetterQueue]) sub.onAvailable = () => this.pump(sub);
  }

  private unwire(q: Queue): void {
    for (const sub of [q.main, q.deadLetterQueue]) {
      for (const link of this.deliveryLinks.get(sub) ?? []) {
        link.sender.close({
          condition: 'amqp:not-found',
          description: `The messaging entity '${q.name}' could not be found (it was deleted).`,
        });
      }
      this.deliveryLinks.delete(sub);
    }
  }

  private pump(sub: SubQueue): void {
    if (this.pumping.has(sub)) return;
    this.pumping.add(sub);
    try {
      for (const link of this.deliveryLinks.get(sub) ?? []) this.pumpLink(link);
    } catch (err) {
      this.unexpected('delivery', err);
    } finally {
      this.pumping.delete(sub);
    }
  }

  private pumpGuarded(link: DeliveryLink): void {
    try {
      this.pumpLink(link);
    } catch (err) {
      this.unexpected('delivery', err);
    }
  }

  /** Deliveries of the link rhea still holds: the credit they will take is not yet taken. */
  private unwritten(link: DeliveryLink): number {
    const outgoing = (link.sender.session as unknown as { outgoing: { next_pending_delivery: number } }).outgoing;
    const ids = link.unwritten;
    let written = 0;
    while (written < ids.length && ids[written]! < outgoing.next_pending_delivery) written++;
    if (written > 0) ids.splice(0, written);
    return ids.length;
  }

  private pumpLink(link: DeliveryLink): void {
    const { sender, sub, mode } = link;
    while (sender.is_open() && sender.sendable() && (sender as unknown as { credit: number }).credit > this.unwritten(link)) {
      const m = sub.take(mode);
      if (!m) break;
      const message = deliveredMessage(m, mode === 'peekLock');
      const tag = m.lock ? m.lock.token : Buffer.alloc(16);
      const delivery = sender.send(message, tag) as unknown as { id: number };
      link.unwritten.push(delivery.id);
    }
  }

  /** The queue an address names, created on first use when auto-create is on. */
  private resolveQueue(address: Extract<Address, { queue: string }>): Queue {
    const registry = this.options.registry;
    const existing = registry.queue(address.queue);
    if (existing) return existing;
    if (!this.options.autoCreateQueues) {
      throw new BrokerError('amqp:not-found', `The messaging entity '${address.queue}' could not be found (auto-create is off).`);
    }
    try {
      return registry.createQueue(address.queue, {});
    } catch (err) {
      if (err instanceof QueueRegistryError) {
        throw new BrokerError(err.code === 'limit' ? 'amqp:resource-limit-exceeded' : 'amqp:not-allowed', err.message);
      }
      throw err;
    }
  }

  private state(connection: Rhea.Connection): ConnectionState {
    let s = this.connections.get(connection);
    if (!s) {
      s = { connection, authorized: false, overLimit: false, replyLinks: new Map() };
      this.connections.set(connection, s);
    }
    return s;
  }

  private listen(): void {
    const c = this.container;
    c.on('connection_open', (ctx: Rhea.EventContext) => {
      const connection = ctx.connection;
      this.state(connection);
      // rhea reports an undecodable frame on its connection, then ends the socket.
      const bad = (err: unknown) => this.onBadInput(connection, err);
      connection.on('protocol_error', bad);
      connection.on('error', bad);
      const max = this.options.limits.maxConnections;
      if (this.connections.size > max) this.state(connection).overLimit = true;
    });
    const forget = (ctx: Rhea.EventContext) => {
      this.connections.delete(ctx.connection);
      this.forgetLinks(ctx.connection);
    };
    c.on('connection_close', forget);
    c.on('disconnected', forget);
    // Before the AMQP open (a TLS or HTTP client, say) rhea just ends the socket; remote link and
    // session errors reach the container as 'error' and need no action.
    c.on('protocol_error', () => undefined);
    c.on('error', () => undefined);
    c.on('sender_open', (ctx: Rhea.EventContext) => this.onSenderOpen(ctx));
    c.on('receiver_open', (ctx: Rhea.EventContext) => this.onReceiverOpen(ctx));
    c.on('sender_close', (ctx: Rhea.EventContext) => {
      this.dropSender(ctx.sender);
      const replyLinks = this.connections.get(ctx.connection)?.replyLinks;
      for (const [key, link] of replyLinks ?? []) if (link === ctx.sender) replyLinks!.delete(key);
    });
    c.on('session_close', (ctx: Rhea.EventContext) => {
      for (const links of this.deliveryLinks.values()) {
        for (const link of links) if (link.sender.session === ctx.session) links.delete(link);
      }
    });
    c.on('sendable', (ctx: Rhea.EventContext) => {
      const link = ctx.sender && this.senders.get(ctx.sender);
      if (link) this.pumpGuarded(link);
    });
    c.on('sender_draining', (ctx: Rhea.EventContext) => {
      const sender = ctx.sender;
      if (!sender) return;
      const link = this.senders.get(sender);
      if (link) this.pumpGuarded(link);
      sender.set_drained(true);
    });
    c.on('message', (ctx: Rhea.EventContext) => this.onMessage(ctx));
    c.on('accepted', (ctx: Rhea.EventContext) => this.onDisposition(ctx, 'complete'));
    c.on('released', (ctx: Rhea.EventContext) => this.onDisposition(ctx, 'abandon'));
    c.on('modified', (ctx: Rhea.EventContext) => {
      const state: unknown = ctx.delivery?.remote_state;
      this.onDisposition(ctx, field(state, 'undeliverable_here') === true ? 'defer' : 'abandon');
    });
    c.on('rejected', (ctx: Rhea.EventContext) => this.onDisposition(ctx, 'dead-letter'));
  }

  /** An undecodable frame: close that connection only, with `amqp:decode-error`. */
  private onBadInput(connection: Rhea.Connection, err: unknown): void {
    const detail = `: ${errorText(err).slice(0, 200)}`;
    try {
      connection.close({
        condition: 'amqp:decode-error',
        description: `the emulator could not decode a frame on this connection${detail}`,
      });
      const internal = connection as unknown as { _process?: () => void; output?: () => void };
      internal._process?.();
      internal.output?.();
    } catch {
      // the socket is ending anyway
    }
  }

  private forgetLinks(connection: Rhea.Connection): void {
    for (const links of this.deliveryLinks.values()) {
      for (const link of links) if (link.sender.connection === connection) links.delete(link);
    }
  }

  private dropSender(sender: Rhea.Sender | undefined): void {
    if (!sender) return;
    const link = this.senders.get(sender);
    if (link) this.deliveryLinks.get(link.sub)?.delete(link);
  }

  private refuse(link: Rhea.Sender | Rhea.Receiver, condition: string, description: string): void {
    link.close({ condition, description });
  }

  private entityAddress(state: ConnectionState, raw: string | undefined): Address {
    if (state.overLimit) {
      const max = this.options.limits.maxConnections;
      return { kind: 'refused', condition: 'amqp:resource-limit-exceeded', description: `the emulator accepts at most ${max} connections` };
    }
    const address = parseAddress(raw);
    if ((address.kind === 'queue' || address.kind === 'management') && !state.authorized) {
      return {
        kind: 'refused',
        condition: 'amqp:unauthorized-access',
        description: 'put a valid SAS token on $cbs before attaching to an entity',
      };
    }
    const fault = address.kind === 'queue' ? this.fault('attach') : undefined;
    if (fault) return { kind: 'refused', ...fault };
    return address;
  }

  /** The client attached a receiver: we send on this link. */
  private onSenderOpen(ctx: Rhea.EventContext): void {
    const sender = ctx.sender;
    if (!sender) return;
    const state = this.state(ctx.connection);
    const source: unknown = sender.source;
    const raw = asString(field(source, 'address'));
    const target = asString(field(sender.target, 'address'));
    sender.set_source({ address: raw ?? '' });
    if (target !== undefined) sender.set_target({ address: target });
    const local = (sender as unknown as { local: { attach: Record<string, unknown> } }).local.attach;
    local.snd_settle_mode = sender.snd_settle_mode;
    local.rcv_settle_mode = field(sender, 'rcv_settle_mode');
    local.max_message_size = this.options.limits.maxMessageSizeInBytes;
    const address = this.entityAddress(state, raw);
    switch (address.kind) {
      case 'refused':
        return this.refuse(sender, address.condition, address.description);
      case 'cbs':
      case 'management':
        state.replyLinks.set(sender.name, sender);
        if (target !== undefined) state.replyLinks.set(target, sender);
        return;
      case 'queue':
        break;
    }
    const filter = plainMap(field(source, 'filter'));
    if (Object.keys(filter).some((k) => k.includes('session-filter'))) {
      return this.refuse(sender, 'amqp:not-implemented', 'message sessions are not supported by this emulator');
    }
    let queue: Queue;
    try {
      queue = this.resolveQueue(address);
    } catch (err) {
      if (err instanceof BrokerError) return this.refuse(sender, err.condition, err.message);
      throw err;
    }
    const sub = address.deadLetter ? queue.deadLetterQueue : queue.main;
    const mode = sender.snd_settle_mode === RECEIVE_AND_DELETE ? 'receiveAndDelete' : 'peekLock';
    answerEveryDrain(sender);
    const link: DeliveryLink = { kind: 'deliver', sender, sub, mode, unwritten: [] };
    this.senders.set(sender, link);
    let set = this.deliveryLinks.get(sub);
    if (!set) {
      set = new Set();
      this.deliveryLinks.set(sub, set);
    }
    set.add(link);
  }

  /** The client attached a sender: we receive on this link. */
  private onReceiverOpen(ctx: Rhea.EventContext): void {
    const receiver = ctx.receiver;
    if (!receiver) return;
    const state = this.state(ctx.connection);
    const target: unknown = receiver.target;
    const raw = asString(field(target, 'address'));
    const local = (receiver as unknown as { local: { attach: Record<string, unknown> } }).local.attach;
    local.max_message_size = this.options.limits.maxMessageSizeInBytes;
    receiver.set_target({ address: raw ?? '' });
    const source = asString(field(receiver.source, 'address'));
    if (source !== undefined) receiver.set_source({ address: source });
    if (raw === undefined && target !== undefined && target !== null) {
      return this.refuse(receiver, 'amqp:not-implemented', 'transactions are not supported by this emulator');
    }
    const address = this.entityAddress(state, raw);
    switch (address.kind) {
      case 'refused':
        return this.refuse(receiver, address.condition, address.description);
      case 'cbs':
        this.receivers.set(receiver, { kind: 'cbs', state });
        return;
      default:
        break;
    }
    // Refused before the queue is looked up, so the refusal creates no queue.
    if (address.kind === 'queue' && address.deadLetter) {
      return this.refuse(receiver, 'amqp:not-allowed', `messages cannot be sent to the dead-letter queue of "${address.queue}"`);
    }
    let queue: Queue;
    try {
      queue = this.resolveQueue(address);
    } catch (err) {
      if (err instanceof BrokerError) return this.refuse(receiver, err.condition, err.message);
      throw err;
    }
    if (address.kind === 'management') {
      this.receivers.set(receiver, { kind: 'management', sub: address.deadLetter ? queue.deadLetterQueue : queue.main, state });
    } else {
      this.receivers.set(receiver, { kind: 'ingest', queue });
    }
  }

  private reply(state: ConnectionState, request: AmqpMessage, message: AmqpMessage): void {
    const to = asString(request.reply_to);
    const link = to === undefined ? undefined : state.replyLinks.get(to);
    if (!link || !link.is_open()) return;
    try {
      link.send(message);
    } catch (err) {
      const description = `the emulator could not encode its reply: ${errorText(err)}`;
      link.send(replyMessage(request, errorReply('amqp:internal-error', description)));
    }
  }

  private onMessage(ctx: Rhea.EventContext): void {
    const receiver = ctx.receiver;
    const delivery = ctx.delivery;
    if (!receiver || !delivery) return;
    const link = this.receivers.get(receiver);
    if (!link) {
      delivery.update(true, rejectedState({ condition: 'amqp:not-allowed', description: 'this link does not accept messages' }));
      return;
    }
    // A queue deleted and created again under the same name: the link follows the name.
    if (link.kind === 'ingest') {
      link.queue = this.options.registry.queue(link.queue.name) ?? link.queue;
    } else if (link.kind === 'management') {
      const current = this.options.registry.queue(link.sub.queue.name);
      if (current) link.sub = link.sub.isDeadLetter ? current.deadLetterQueue : current.main;
    }
    switch (link.kind) {
      case 'cbs':
        return this.onCbs(link.state, ctx.message as AmqpMessage, delivery);
      case 'management':
        return this.onManagement(link.state, link.sub, ctx.message as AmqpMessage, delivery);
      case 'ingest':
        return this.onSend(link.queue, ctx, delivery);
    }
  }

  private onCbs(state: ConnectionState, request: AmqpMessage, delivery: Rhea.Delivery): void {
    delivery.update(true, acceptedState());
    this.cbsPuts++;
    const fault = this.fault('cbs');
    const verdict = fault
      ? { ok: false, status: 503, description: fault.description, audience: undefined }
      : handlePutToken(request, this.options.key, this.options.now());
    if (verdict.ok) {
      state.authorized = true;
      const path = verdict.audience === undefined ? undefined : parseAddress(entityPath(verdict.audience));
      if (path && (path.kind === 'queue' || path.kind === 'management')) {
        const q = this.options.registry.queue(path.queue);
        if (q) q.stats.cbsPuts++;
      }
    }
    this.reply(state, request, {
      ...(request.message_id !== undefined ? { correlation_id: request.message_id } : {}),
      application_properties: { 'status-code': verdict.status, 'status-description': verdict.description },
      body: null,
    });
  }

  private onManagement(state: ConnectionState, sub: SubQueue, request: AmqpMessage, delivery: Rhea.Delivery): void {
    delivery.update(true, acceptedState());
    let reply: ManagementReply;
    const fault = this.fault('management');
    try {
      const gone = this.deletedError(sub.queue);
      if (gone) throw gone;
      reply = fault
        ? errorReply(fault.condition, fault.description)
        : handleManagement(request, { sub, maxMessageSizeInBytes: this.options.limits.maxMessageSizeInBytes });
    } catch (err) {
      if (err instanceof BrokerError) reply = errorReply(err.condition, err.message);
      else reply = errorReply('amqp:internal-error', errorText(err));
    }
    this.reply(state, request, replyMessage(request, reply));
  }

  private deletedError(queue: Queue): BrokerError | undefined {
    if (this.options.registry.queue(queue.name) === queue) return undefined;
    return new BrokerError('amqp:not-found', `The messaging entity '${queue.name}' could not be found (it was deleted).`);
  }

  private onSend(queue: Queue, ctx: Rhea.EventContext, delivery: Rhea.Delivery): void {
    const gone = this.deletedError(queue);
    if (gone) {
      delivery.update(true, rejectedState({ condition: gone.condition, description: gone.message }));
      return;
    }
    queue.stats.framesIn++;
    const fault = this.fault('send');
    if (fault) {
      delivery.update(true, rejectedState(fault));
      return;
    }
    const max = this.options.limits.maxMessageSizeInBytes;
    try {
      const parts: { message: AmqpMessage; size: number }[] = [];
      const format = field(ctx, 'format');
      if (format === BATCH_FORMAT) {
        const raw = toBuffer(ctx.message);
        if (!raw) throw new BrokerError('amqp:decode-error', 'a batch transfer must be binary');
        if (raw.length > max) throw sizeError(raw.length, max);
        for (const inner of unpackBatch(raw)) parts.push({ message: decodeMessage(inner), size: inner.length });
      } else if (format === undefined || format === 0) {
        const message = ctx.message as AmqpMessage;
        const size = encodeMessage(message).length;
        if (size > max) throw sizeError(size, max);
        parts.push({ message, size });
      } else {
        throw new BrokerError('amqp:not-implemented', `unsupported message format ${typeof format === 'number' ? format : '?'}`);
      }
      for (const { message } of parts) {
        const annotations = plainMap(message.message_annotations);
        if (annotations['x-opt-via-partition-key'] !== undefined) {
          throw new BrokerError('amqp:not-implemented', 'transactions are not supported by this emulator');
        }
      }
      queue.checkRoom(parts.reduce((n, p) => n + p.size, 0));
      for (const { message, size } of parts) queue.enqueue(message, size);
      delivery.update(true, acceptedState());
    } catch (err) {
      const error =
        err instanceof BrokerError
          ? { condition: err.condition, description: err.message }
          : { condition: 'amqp:decode-error', description: errorText(err) };
      delivery.update(true, rejectedState(error));
    }
  }

  /** A link disposition; rhea runs this outside any try/catch, so whatever goes wrong is answered `amqp:internal-error`. */
  private onDisposition(ctx: Rhea.EventContext, outcome: Outcome): void {
    try {
      this.settleDisposition(ctx, outcome);
    } catch (err) {
      this.unexpected('settlement', err);
      try {
        const delivery = ctx.delivery;
        if (delivery && !delivery.settled) {
          delivery.update(
            true,
            rejectedState({
              condition: 'amqp:internal-error',
              description: `the emulator failed to settle the message: ${errorText(err)}`,
            }),
          );
          (delivery as unknown as { remote_settled: boolean }).remote_settled = true;
        }
      } catch {
        // nothing more can be done for this delivery
      }
    }
  }

  private settleDisposition(ctx: Rhea.EventContext, outcome: Outcome): void {
    const sender = ctx.sender;
    const delivery = ctx.delivery;
    if (!sender || !delivery) return;
    const link = this.senders.get(sender);
    if (!link || link.mode === 'receiveAndDelete' || delivery.settled) return;
    const token = toBuffer(delivery.tag);
    const state: unknown = delivery.remote_state;
    // Settled here, the delivery is done: rhea keeps a delivery in the session's window until both
    // ends settled, and a receiver in rcv-settle-mode second never sends a second disposition.
    const settle = (state: unknown) => {
      delivery.update(true, state);
      (delivery as unknown as { remote_settled: boolean }).remote_settled = true;
    };
    const fault = this.fault('settle');
    if (fault) {
      settle(rejectedState(fault));
      return;
    }
    let details = {};
    if (outcome === 'dead-letter') {
      const error: unknown = field(state, 'error');
      const info = plainMap(field(error, 'info'));
      const { DeadLetterReason, DeadLetterErrorDescription, ...rest } = info;
      details = {
        reason: asString(DeadLetterReason),
        description: asString(DeadLetterErrorDescription),
        propertiesToModify: Object.keys(rest).length > 0 ? rest : undefined,
      };
    } else if (outcome === 'abandon' || outcome === 'defer') {
      const annotations = field(state, 'message_annotations');
      if (annotations !== undefined && annotations !== null) details = { propertiesToModify: plainMap(annotations) };
    }
    try {
      link.sub.queue.sweep();
      const ok = token !== undefined && link.sub.settle(token, outcome, details);
      if (ok) settle(settledState(outcome));
      else {
        settle(
          rejectedState({
            condition: LOCK_LOST,
            description: 'The lock supplied is invalid. Either the lock expired, or the message has already been removed from the queue.',
          }),
        );
      }
    } catch (err) {
      if (err instanceof BrokerError) settle(rejectedState({ condition: err.condition, description: err.message }));
      else throw err;
    }
  }
}

/**
 * rhea 3.0.5 echoes a drain only while credit is left, so a drain whose credit the transfers used up
 * would never be answered. A drain is answered at once (README, "What the broker does"): the flow
 * after the transfers hands back what credit remains, none included.
 */
function answerEveryDrain(sender: Rhea.Sender): void {
  const internal = sender as unknown as {
    _draining: boolean;
    _drained: boolean;
    credit: number;
    delivery_count: number;
    _get_drain: () => boolean;
  };
  internal._get_drain = function (this: typeof internal): boolean {
    if (!this._draining || !this._drained) return false;
    this.delivery_count += this.credit;
    this.credit = 0;
    this._draining = false;
    return true;
  };
}

/** Tells rhea a connection's socket is gone: it clears its heartbeat timers and emits 'disconnected'. */
function disconnect(connection: Rhea.Connection): void {
  (connection as unknown as { _disconnected?: () => void })._disconnected?.();
}

function sizeError(size: number, max: number): BrokerError {
  return new BrokerError(
    'amqp:link:message-size-exceeded',
    `The received message (${size} bytes) exceeds the limit of ${max} bytes (max_message_size).`,
  );
}
