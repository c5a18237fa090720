/**
 * Link addresses as Service Bus clients send them: `$cbs`, `<queue>`, `<queue>/$DeadLetterQueue`
 * (any case) and either of those followed by `/$management`.
 */
import { queueNameProblem } from './profile';

export type Address =
  | { kind: 'cbs' }
  | { kind: 'queue' | 'management'; queue: string; deadLetter: boolean }
  | { kind: 'refused'; condition: string; description: string };

/** The entity path of an address or audience: scheme and host removed. */
export function entityPath(raw: string): string {
  const m = /^[a-z]+:\/\/[^/]*\/?(.*)$/i.exec(raw);
  const path = m ? (m[1] ?? '') : raw;
  return path.replace(/^\/+/, '');
}

export function parseAddress(raw: string | undefined): Address {
  if (raw === undefined || raw === '') return { kind: 'refused', condition: 'amqp:invalid-field', description: 'the link has no address' };
  const path = entityPath(raw);
  if (path.toLowerCase() === '$cbs') return { kind: 'cbs' };
  const segments = path.split('/');
  let management = false;
  let deadLetter = false;
  if (segments.length > 1 && segments[segments.length - 1]!.toLowerCase() === '$management') {
    management = true;
    segments.pop();
  }
  if (segments.length > 1 && segments[segments.length - 1]!.toLowerCase() === '$deadletterqueue') {
    deadLetter = true;
    segments.pop();
  }
  const lower = segments.map((s) => s.toLowerCase());
  if (lower.includes('subscriptions') || lower.includes('$subscriptions')) {
    return {
      kind: 'refused',
      condition: 'amqp:not-implemented',
      description: `topics and subscriptions are not supported by this emulator (address "${path.slice(0, 200)}"); use queues`,
    };
  }
  if (lower.includes('$transfer') || lower.includes('$transferdeadletterqueue')) {
    return {
      kind: 'refused',
      condition: 'amqp:not-implemented',
      description: 'transfer dead-letter queues are not supported by this emulator (no auto-forward or transactions)',
    };
  }
  const queue = segments.join('/');
  const problem = queueNameProblem(queue);
  if (problem !== undefined) return { kind: 'refused', condition: 'amqp:not-allowed', description: problem };
  return { kind: management ? 'management' : 'queue', queue, deadLetter };
}
