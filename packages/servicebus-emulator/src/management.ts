/**
 * Request/response operations on `<queue>/$management`: renew-lock, peek-message,
 * update-disposition, schedule-message, cancel-scheduled-message and receive-by-sequence-number.
 * See README.md, "Management operations".
 */
import { asString, decodeMessage, encodeMessage, field, plainMap, toBuffer, toLong, types, type AmqpMessage } from './amqp';
import { BrokerError, deliveredMessage, LOCK_LOST, type Outcome, type SubQueue } from './queue';

export interface ManagementReply {
  status: number;
  description: string;
  condition?: string;
  body?: unknown;
}

const STATUS: Record<string, number> = {
  [LOCK_LOST]: 410,
  'amqp:not-found': 404,
  'com.microsoft:message-not-found': 404,
  'amqp:not-allowed': 400,
  'com.microsoft:argument-error': 400,
  'amqp:resource-limit-exceeded': 403,
  'amqp:link:message-size-exceeded': 403,
  'amqp:not-implemented': 501,
  'com.microsoft:server-busy': 503,
  'amqp:unauthorized-access': 401,
};

export function errorReply(condition: string, description: string): ManagementReply {
  return { status: STATUS[condition] ?? 500, description, condition };
}

const DISPOSITIONS: Record<string, Outcome> = {
  completed: 'complete',
  abandoned: 'abandon',
  defered: 'defer',
  deferred: 'defer',
  suspended: 'dead-letter',
};

function list(v: unknown): unknown[] {
  if (Array.isArray(v)) return v as unknown[];
  if (v === undefined || v === null) return [];
  const inner = field(v, 'value');
  return Array.isArray(inner) ? (inner as unknown[]) : [v];
}

function tokens(body: Record<string, unknown>): Buffer[] {
  return list(body['lock-tokens']).map((t) => {
    const b = toBuffer(t);
    if (!b || b.length !== 16) throw new BrokerError('com.microsoft:argument-error', 'a lock token is not a 16-byte uuid');
    return b;
  });
}

function sequenceNumbers(body: Record<string, unknown>): number[] {
  return list(body['sequence-numbers']).map((s) => {
    const n = toLong(s);
    if (n === undefined) throw new BrokerError('com.microsoft:argument-error', 'a sequence number is not a long');
    return n;
  });
}

/** Short operation name for stats: `com.microsoft:renew-lock` → `renew-lock`. */
export function operationName(request: AmqpMessage): string {
  const op = asString(plainMap(request.application_properties).operation) ?? '';
  return op.replace(/^com\.microsoft:/, '');
}

/** Operations counted by name in `stats()`; any other request counts as `other` (README, "Broker API"). */
const KNOWN_OPERATIONS = new Set([
  'renew-lock',
  'peek-message',
  'update-disposition',
  'schedule-message',
  'cancel-scheduled-message',
  'receive-by-sequence-number',
  'renew-session-lock',
  'set-session-state',
  'get-session-state',
  'get-message-sessions',
  'add-rule',
  'remove-rule',
  'enumerate-rules',
]);

export interface ManagementContext {
  sub: SubQueue;
  maxMessageSizeInBytes: number;
}

export function handleManagement(request: AmqpMessage, ctx: ManagementContext): ManagementReply {
  const { sub } = ctx;
  const queue = sub.queue;
  const body = plainMap(request.body);
  const op = operationName(request);
  const counted = KNOWN_OPERATIONS.has(op) ? op : 'other';
  queue.stats.managementOps[counted] = (queue.stats.managementOps[counted] ?? 0) + 1;
  queue.sweep();
  switch (op) {
    case 'renew-lock': {
      const expirations = tokens(body).map((t) => {
        const until = sub.renew(t);
        if (until === undefined)
          throw new BrokerError(
            LOCK_LOST,
            'The lock supplied is invalid. Either the lock expired, or the message has already been removed from the queue.',
          );
        return new Date(until);
      });
      return { status: 200, description: 'OK', body: { expirations } };
    }
    case 'peek-message': {
      const from = toLong(body['from-sequence-number']) ?? 1;
      const count = Math.min(toLong(body['message-count']) ?? 1, 250);
      const found = sub.peek(from, count);
      if (found.length === 0) return { status: 204, description: 'No Content', body: { messages: [] } };
      return {
        status: 200,
        description: 'OK',
        body: { messages: found.map((m) => ({ message: encodeMessage(deliveredMessage(m, true)) })) },
      };
    }
    case 'update-disposition': {
      const status = asString(body['disposition-status']) ?? '';
      const outcome = DISPOSITIONS[status];
      if (!outcome) throw new BrokerError('com.microsoft:argument-error', `unknown disposition-status "${status.slice(0, 32)}"`);
      const details = {
        reason: asString(body['deadletter-reason']),
        description: asString(body['deadletter-description']),
        propertiesToModify: body['properties-to-modify'] === undefined ? undefined : plainMap(body['properties-to-modify']),
      };
      for (const t of tokens(body)) {
        if (!sub.settle(t, outcome, details)) {
          throw new BrokerError(
            LOCK_LOST,
            'The lock supplied is invalid. Either the lock expired, or the message has already been removed from the queue.',
          );
        }
      }
      return { status: 200, description: 'OK', body: {} };
    }
    case 'schedule-message': {
      if (sub.isDeadLetter) throw new BrokerError('amqp:not-allowed', 'messages cannot be scheduled on a dead-letter queue');
      const entries = list(body.messages).map((e) => plainMap(e));
      const decoded = entries.map((e) => {
        const bytes = toBuffer(e.message);
        if (!bytes) throw new BrokerError('com.microsoft:argument-error', 'a scheduled message is not binary');
        if (bytes.length > ctx.maxMessageSizeInBytes) {
          throw new BrokerError(
            'amqp:link:message-size-exceeded',
            `The message is ${bytes.length} bytes, larger than the limit of ${ctx.maxMessageSizeInBytes} bytes.`,
          );
        }
        return { message: decodeMessage(bytes), size: bytes.length };
      });
      queue.checkRoom(decoded.reduce((n, d) => n + d.size, 0));
      const numbers = decoded.map(({ message, size }) => {
        const at = plainMap(message.message_annotations)['x-opt-scheduled-enqueue-time'];
        const when = at instanceof Date ? at.getTime() : typeof at === 'number' ? at : queue.now();
        return queue.enqueue(message, size, when).sequenceNumber ?? 0;
      });
      return { status: 200, description: 'OK', body: { 'sequence-numbers': numbers.map((n) => types.wrap_long(n)) } };
    }
    case 'cancel-scheduled-message': {
      for (const n of sequenceNumbers(body)) {
        if (!queue.cancelScheduled(n))
          throw new BrokerError('com.microsoft:message-not-found', `No scheduled message with sequence number ${n} was found.`);
      }
      return { status: 200, description: 'OK', body: {} };
    }
    case 'receive-by-sequence-number': {
      const mode = toLong(body['receiver-settle-mode']) === 0 ? 'receiveAndDelete' : 'peekLock';
      const found = sequenceNumbers(body).map((n) => {
        const m = sub.messages.get(n);
        if (!m || m.state !== 'deferred')
          throw new BrokerError('com.microsoft:message-not-found', `No deferred message with sequence number ${n} was found.`);
        // Handed out once at a time: a deferred message still locked by a receive is not found (README, "Management operations").
        if (m.lock && m.lock.until > queue.now()) {
          throw new BrokerError(
            'com.microsoft:message-not-found',
            `The deferred message with sequence number ${n} is locked by another receive until its lock is settled or expires.`,
          );
        }
        return m;
      });
      const messages = found.map((m) => {
        queue.stats.deliveries++;
        if (mode === 'receiveAndDelete') {
          const encoded = encodeMessage(deliveredMessage(m, false));
          sub.remove(m);
          return { message: encoded };
        }
        sub.lock(m, queue.now());
        return { message: encodeMessage(deliveredMessage(m, true)), 'lock-token': types.wrap_uuid(m.lock!.token) };
      });
      return { status: 200, description: 'OK', body: { messages } };
    }
    case 'renew-session-lock':
    case 'set-session-state':
    case 'get-session-state':
    case 'get-message-sessions':
      throw new BrokerError('amqp:not-implemented', 'message sessions are not supported by this emulator');
    case 'add-rule':
    case 'remove-rule':
    case 'enumerate-rules':
      throw new BrokerError('amqp:not-implemented', 'topics and subscription rules are not supported by this emulator');
    default:
      throw new BrokerError('amqp:not-implemented', `the $management operation "${op.slice(0, 64)}" is not supported by this emulator`);
  }
}

/** The response message for a request. */
export function replyMessage(request: AmqpMessage, reply: ManagementReply): AmqpMessage {
  const props: Record<string, unknown> = { statusCode: reply.status, statusDescription: reply.description };
  if (reply.condition !== undefined) props.errorCondition = types.wrap_symbol(reply.condition);
  const correlation: unknown = request.message_id ?? request.correlation_id;
  return { correlation_id: correlation, application_properties: props, body: reply.body ?? null } as AmqpMessage;
}
