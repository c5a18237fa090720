import { describe, expect, it } from '@jest/globals';
import { ServiceBusError } from '@azure/service-bus';
import { namespaceHost, describeConnection } from './connection';
import { translateError } from './errors';
import { serviceBusMessageId } from './message-id';
import { isoDuration, parseIsoDuration } from './open';
import { deadLetterProperties, deadLetterReasonText } from './servicebus-queue';

function mapped(error: unknown, callerAborted = false) {
  const e = translateError(error, { operation: 'send', queue: 'q', callerAborted });
  return { code: e.code, retryable: e.retryable, message: e.message };
}

describe('translateError', () => {
  it.each([
    ['MessageLockLost', 'lock-lost', false],
    ['MessagingEntityNotFound', 'not-found', false],
    ['MessageSizeExceeded', 'message-too-large', false],
    ['ServiceBusy', 'throttled', true],
    ['QuotaExceeded', 'throttled', true],
    ['UnauthorizedAccess', 'auth', false],
    ['ServiceCommunicationProblem', 'unavailable', true],
    ['ServiceTimeout', 'timeout', true],
  ] as const)('maps ServiceBusError %s to %s', (code, jobq, retryable) => {
    const secret = 'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=c2VjcmV0';
    const e = mapped(new ServiceBusError(`boom ${secret}`, code));
    expect(e).toMatchObject({ code: jobq, retryable });
    expect(e.message).not.toContain('boom');
    expect(e.message).not.toContain('c2VjcmV0');
    expect(e.message).toContain(`(${code})`);
  });

  it('maps administration answers by status', () => {
    const rest = (statusCode: number, code?: string) => ({
      name: 'RestError',
      statusCode,
      code,
      message: 'SharedAccessSignature sr=x&sig=secret',
    });
    expect(mapped(rest(401, 'UnauthorizedRequestError'))).toMatchObject({ code: 'auth' });
    expect(mapped(rest(403))).toMatchObject({ code: 'auth' });
    expect(mapped(rest(403, 'QuotaExceededError'))).toMatchObject({ code: 'throttled' });
    expect(mapped(rest(404, 'MessageEntityNotFoundError'))).toMatchObject({ code: 'not-found' });
    expect(mapped(rest(409))).toMatchObject({ code: 'conflict' });
    expect(mapped(rest(429))).toMatchObject({ code: 'throttled', retryable: true });
    expect(mapped(rest(500))).toMatchObject({ code: 'unavailable', retryable: true });
    expect(mapped(rest(400, 'ServiceError'))).toMatchObject({ code: 'invalid-argument' });
    expect(mapped(rest(401)).message).not.toContain('sig=');
  });

  it('tells the caller’s abort from a time limit, and a socket error from a bug', () => {
    expect(mapped({ name: 'AbortError' }, true).code).toBe('aborted');
    expect(mapped({ name: 'AbortError' }).code).toBe('timeout');
    expect(mapped({ name: 'MessagingError', code: 'GeneralError', syscall: 'connect', errno: -111 })).toMatchObject({
      code: 'unavailable',
      retryable: true,
    });
    // GeneralError follows the SDK's own retryable flag.
    expect(mapped(Object.assign(new ServiceBusError('x', 'GeneralError'), { retryable: false }))).toMatchObject({
      code: 'internal',
      retryable: false,
    });
    expect(mapped(Object.assign(new ServiceBusError('x', 'GeneralError'), { retryable: true }))).toMatchObject({
      code: 'unavailable',
      retryable: true,
    });
    expect(mapped(new Error('The message has either been deleted or already settled')).code).toBe('internal');
  });
});

describe('message ids', () => {
  it('keeps short ids, hashes long ones, randomises missing and `current` ones', () => {
    expect(serviceBusMessageId('wf/t/3')).toBe('wf/t/3');
    expect(serviceBusMessageId('x'.repeat(128))).toBe('x'.repeat(128));
    expect(serviceBusMessageId('x'.repeat(129))).toMatch(/^h:[A-Za-z0-9_-]{43}$/);
    expect(serviceBusMessageId('x'.repeat(129))).toBe(serviceBusMessageId('x'.repeat(129)));
    for (const id of [undefined, '', 'wf/t/current', 'wf/t/current/done']) {
      expect(serviceBusMessageId(id)).toMatch(/^[0-9a-f-]{36}$/);
    }
    expect(serviceBusMessageId('wf/current/2/done')).toBe('wf/current/2/done');
  });
});

describe('connections and durations', () => {
  it('reads namespaces and connection strings without quoting keys', () => {
    expect(namespaceHost('jobq-prod')).toBe('jobq-prod.servicebus.windows.net');
    expect(namespaceHost('sb://Jobq-Prod.servicebus.windows.net/')).toBe('jobq-prod.servicebus.windows.net');
    expect(() => namespaceHost('a b')).toThrow(/namespace/);
    expect(
      describeConnection({
        connectionString: 'Endpoint=sb://127.0.0.1:5672;SharedAccessKeyName=k;SharedAccessKey=s3cret;UseDevelopmentEmulator=true',
      }),
    ).toEqual({
      host: '127.0.0.1:5672',
      emulator: true,
    });
    let message = '';
    try {
      describeConnection({ connectionString: 'SharedAccessKeyName=k;SharedAccessKey=s3cret' });
    } catch (error) {
      message = String(error);
    }
    expect(message).toContain('no Endpoint');
    expect(message).not.toContain('s3cret');
  });

  it('reads and writes ISO-8601 durations as .NET writes TimeSpans', () => {
    expect(parseIsoDuration('PT1M')).toBe(60_000);
    expect(parseIsoDuration('PT0.5S')).toBe(500);
    expect(parseIsoDuration('P1DT2H')).toBe(26 * 3_600_000);
    expect(parseIsoDuration('PT')).toBeUndefined();
    expect(parseIsoDuration('bogus')).toBeUndefined();
    expect(isoDuration(30_000)).toBe('PT30S');
    expect(isoDuration(2_500)).toBe('PT2.5S');
  });
});

describe('dead-letter properties', () => {
  it('cuts the reason to its first line (256 characters) and the description to 4 KiB, and reads them back', () => {
    const p = deadLetterProperties(`first line\nsecond ${'✓'.repeat(2_000)}`);
    expect(p.deadLetterReason).toBe('first line');
    expect(Buffer.byteLength(p.deadLetterErrorDescription)).toBeLessThanOrEqual(4_096);
    expect(p.deadLetterErrorDescription.endsWith('…')).toBe(true);
    expect(deadLetterProperties('y'.repeat(300)).deadLetterReason).toHaveLength(256);
    expect(deadLetterReasonText(p.deadLetterReason, p.deadLetterErrorDescription)).toBe(p.deadLetterErrorDescription);
    expect(deadLetterReasonText('MaxDeliveryCountExceeded', 'Message could not be consumed after 10 delivery attempts.')).toBe(
      'MaxDeliveryCountExceeded: Message could not be consumed after 10 delivery attempts.',
    );
    expect(deadLetterReasonText(undefined, undefined)).toBeUndefined();
    expect(deadLetterReasonText('only', undefined)).toBe('only');
  });
});
