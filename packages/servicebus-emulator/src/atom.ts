/**
 * The ATOM/XML dialect of the Service Bus management REST API, as `ServiceBusAdministrationClient`
 * writes and reads it for queues: a small XML reader (enough for the client's requests), the queue
 * description decoder, and the entry, feed and error encoders. See README.md, "Admin endpoint".
 */
import type { QueueInfo, QueueProperties } from './types';

export const ATOM_NS = 'http://www.w3.org/2005/Atom';
export const SB_NS = 'http://schemas.microsoft.com/netservices/2010/10/servicebus/connect';
const XSI_NS = 'http://www.w3.org/2001/XMLSchema-instance';
const COUNTS_NS = 'http://schemas.microsoft.com/netservices/2011/06/servicebus';

/** A request body the admin endpoint cannot accept (answered with 400). */
export class AtomError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AtomError';
  }
}

// ---------------------------------------------------------------------------------------------
// XML reader

export interface XmlElement {
  /** Local name (prefix removed). */
  name: string;
  /** Namespace URI, resolved from the xmlns declarations in scope ('' when none). */
  ns: string;
  attributes: Map<string, string>;
  children: XmlElement[];
  /** Concatenated character data directly inside this element. */
  text: string;
}

const MAX_DEPTH = 32;
const NAME = /^[A-Za-z_][\w.-]*(?::[A-Za-z_][\w.-]*)?$/;

function decodeEntities(raw: string, where: number): string {
  return raw.replace(/&([^;&<]*);|&/g, (match, body: string | undefined) => {
    if (body === undefined) throw new AtomError(`malformed XML: a bare '&' near offset ${where}`);
    switch (body) {
      case 'lt':
        return '<';
      case 'gt':
        return '>';
      case 'amp':
        return '&';
      case 'quot':
        return '"';
      case 'apos':
        return "'";
    }
    const code = /^#x[0-9a-fA-F]{1,6}$/.test(body)
      ? parseInt(body.slice(2), 16)
      : /^#[0-9]{1,7}$/.test(body)
        ? parseInt(body.slice(1), 10)
        : NaN;
    if (!Number.isFinite(code) || code > 0x10ffff)
      throw new AtomError(`malformed XML: unknown entity '${match.slice(0, 16)}' near offset ${where}`);
    return String.fromCodePoint(code);
  });
}

/**
 * Parses a document into its root element. Namespaces are resolved; comments, processing
 * instructions and the XML declaration are skipped; CDATA is text; DOCTYPE is refused (no entity
 * expansion). Throws {@link AtomError} naming the offset of the first problem.
 */
export function parseXml(source: string): XmlElement {
  let pos = 0;
  let root: XmlElement | undefined;
  const stack: { element: XmlElement; qname: string; scope: Map<string, string> }[] = [];
  const fail = (what: string): never => {
    throw new AtomError(`malformed XML: ${what} at offset ${pos}`);
  };
  if (source.charCodeAt(0) === 0xfeff) pos = 1;

  while (pos < source.length) {
    const lt = source.indexOf('<', pos);
    const textEnd = lt === -1 ? source.length : lt;
    if (textEnd > pos) {
      const raw = source.slice(pos, textEnd);
      const top = stack[stack.length - 1];
      if (top) top.element.text += decodeEntities(raw, pos);
      else if (raw.trim() !== '') fail('text outside the root element');
      pos = textEnd;
      continue;
    }
    if (source.startsWith('<?', pos)) {
      const end = source.indexOf('?>', pos + 2);
      if (end === -1) fail('an unterminated processing instruction');
      pos = end + 2;
    } else if (source.startsWith('<!--', pos)) {
      const end = source.indexOf('-->', pos + 4);
      if (end === -1) fail('an unterminated comment');
      pos = end + 3;
    } else if (source.startsWith('<![CDATA[', pos)) {
      const end = source.indexOf(']]>', pos + 9);
      const top = stack[stack.length - 1];
      if (end === -1) fail('an unterminated CDATA section');
      if (!top) fail('CDATA outside the root element');
      top!.element.text += source.slice(pos + 9, end);
      pos = end + 3;
    } else if (source.startsWith('<!', pos)) {
      fail('a DOCTYPE or declaration (not accepted)');
    } else if (source.startsWith('</', pos)) {
      const end = source.indexOf('>', pos);
      if (end === -1) fail('an unterminated end tag');
      const qname = source.slice(pos + 2, end).trim();
      const top = stack.pop();
      if (!top) fail(`an end tag </${qname.slice(0, 64)}> without a start tag`);
      if (top!.qname !== qname) fail(`</${qname.slice(0, 64)}> closing <${top!.qname}>`);
      pos = end + 1;
    } else {
      // start tag
      let i = pos + 1;
      const nameMatch = /^[^\s/>]+/.exec(source.slice(i, i + 300));
      if (!nameMatch || !NAME.test(nameMatch[0])) fail('a start tag without a valid name');
      const qname = nameMatch![0];
      i += qname.length;
      const rawAttributes = new Map<string, string>();
      let selfClosing = false;
      for (;;) {
        while (i < source.length && /\s/.test(source[i]!)) i++;
        if (i >= source.length) {
          pos = i;
          fail(`an unterminated start tag <${qname}>`);
        }
        if (source[i] === '>') {
          i++;
          break;
        }
        if (source.startsWith('/>', i)) {
          selfClosing = true;
          i += 2;
          break;
        }
        const attr = /^([^\s=/>]+)\s*=\s*(?:"([^"<]*)"|'([^'<]*)')/.exec(source.slice(i, i + 4096));
        if (!attr || !NAME.test(attr[1]!)) {
          pos = i;
          fail(`a malformed attribute in <${qname}>`);
        }
        if (rawAttributes.has(attr![1]!)) {
          pos = i;
          fail(`a repeated attribute ${attr![1]!} in <${qname}>`);
        }
        rawAttributes.set(attr![1]!, decodeEntities(attr![2] ?? attr![3] ?? '', i));
        i += attr![0].length;
      }
      const parentScope = stack[stack.length - 1]?.scope ?? new Map<string, string>();
      let scope = parentScope;
      const attributes = new Map<string, string>();
      for (const [key, value] of rawAttributes) {
        if (key === 'xmlns' || key.startsWith('xmlns:')) {
          if (scope === parentScope) scope = new Map(parentScope);
          scope.set(key === 'xmlns' ? '' : key.slice(6), value);
        }
      }
      for (const [key, value] of rawAttributes) {
        if (key === 'xmlns' || key.startsWith('xmlns:')) continue;
        const colon = key.indexOf(':');
        if (colon > 0) {
          const uri = scope.get(key.slice(0, colon));
          if (uri === undefined) fail(`an undeclared namespace prefix in attribute ${key}`);
          attributes.set(`{${uri}}${key.slice(colon + 1)}`, value);
        } else {
          attributes.set(key, value);
        }
      }
      const colon = qname.indexOf(':');
      const prefix = colon > 0 ? qname.slice(0, colon) : '';
      const ns = scope.get(prefix);
      if (ns === undefined && prefix !== '') fail(`an undeclared namespace prefix in <${qname}>`);
      const element: XmlElement = { name: colon > 0 ? qname.slice(colon + 1) : qname, ns: ns ?? '', attributes, children: [], text: '' };
      const parent = stack[stack.length - 1];
      if (parent) parent.element.children.push(element);
      else if (root) fail('a second root element');
      else root = element;
      pos = i;
      if (!selfClosing) {
        if (stack.length >= MAX_DEPTH) fail(`elements nested deeper than ${MAX_DEPTH}`);
        stack.push({ element, qname, scope });
      }
    }
  }
  if (stack.length > 0) fail(`an unclosed <${stack[stack.length - 1]!.qname}>`);
  if (!root) fail('no root element');
  return root!;
}

// ---------------------------------------------------------------------------------------------
// Durations (xsd:duration as .NET writes a TimeSpan)

/** TimeSpan.MaxValue, which Service Bus uses for "never" (default TTL, AutoDeleteOnIdle). */
export const NEVER_DURATION = 'P10675199DT2H48M5.4775807S';
/** TimeSpan.MaxValue in ms; durations at or past it read as `Infinity`. */
const NEVER_MS = 922_337_203_685_477;

/** Reads an ISO-8601 duration (`PT1M`, `P14D`, `PT0.5S`, `P1DT2H`); a year is 365 days and a month 30, as .NET reads them. */
export function parseDuration(text: string, field: string): number {
  const m = /^P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(text.trim());
  if (!m || text.trim() === 'P' || text.trim().endsWith('T')) {
    throw new AtomError(`${field} "${text.slice(0, 64)}" is not an ISO-8601 duration such as PT1M or P14D`);
  }
  const [, y, mo, w, d, h, mi, s] = m.map((part) => (part === undefined ? 0 : Number(part)));
  const ms = ((((y! * 365 + mo! * 30 + w! * 7 + d!) * 24 + h!) * 60 + mi!) * 60 + s!) * 1000;
  if (!Number.isFinite(ms)) throw new AtomError(`${field} "${text.slice(0, 64)}" is out of range`);
  return ms >= NEVER_MS ? Infinity : Math.round(ms);
}

/** Writes milliseconds as .NET writes a TimeSpan (`PT1M`, `P14D`, `PT0.5S`); `Infinity` as {@link NEVER_DURATION}. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms >= NEVER_MS) return NEVER_DURATION;
  let rest = Math.max(0, Math.round(ms));
  const days = Math.floor(rest / 86_400_000);
  rest -= days * 86_400_000;
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = rest / 1000;
  let time = '';
  if (hours) time += `${hours}H`;
  if (minutes) time += `${minutes}M`;
  if (seconds) time += `${seconds}S`;
  if (!days && !time) return 'PT0S';
  return `P${days ? `${days}D` : ''}${time ? `T${time}` : ''}`;
}

// ---------------------------------------------------------------------------------------------
// Queue description decoding

export interface QueueRequest {
  properties: Partial<QueueProperties>;
  userMetadata?: string;
}

const OTHER_ENTITIES: Record<string, string> = {
  TopicDescription: 'topics',
  SubscriptionDescription: 'subscriptions',
  RuleDescription: 'rules',
};

function parseBoolean(text: string, field: string): boolean {
  const t = text.trim().toLowerCase();
  if (t === 'true') return true;
  if (t === 'false') return false;
  throw new AtomError(`${field} "${text.slice(0, 64)}" is not true or false`);
}

function parseInteger(text: string, field: string): number {
  const t = text.trim();
  if (!/^-?\d{1,15}$/.test(t)) throw new AtomError(`${field} "${text.slice(0, 64)}" is not an integer`);
  return Number(t);
}

/**
 * Reads the body of a queue create or update (`<entry><content><QueueDescription>…`). Fields are
 * read by name in any order; read-only runtime fields are ignored; features the emulator does not
 * have (sessions, partitioning, auto-forwarding, auto-delete on idle, a status other than Active,
 * entity-level authorization rules) are refused with {@link AtomError}.
 */
export function decodeQueueDescription(body: string): QueueRequest {
  if (body.trim() === '') throw new AtomError('the request has no body: expected an ATOM entry with a QueueDescription');
  const entry = parseXml(body);
  if (entry.name !== 'entry' || entry.ns !== ATOM_NS) {
    throw new AtomError(`expected an ATOM <entry> (namespace ${ATOM_NS}) as the root element, got <${entry.name.slice(0, 64)}>`);
  }
  const content = entry.children.find((c) => c.name === 'content' && c.ns === ATOM_NS);
  const description = content?.children[0];
  if (!description) throw new AtomError('the entry has no <content> with a QueueDescription');
  const other = OTHER_ENTITIES[description.name];
  if (other) throw new AtomError(`${other} are not supported: this emulator serves queues only`);
  if (description.name !== 'QueueDescription' || description.ns !== SB_NS) {
    throw new AtomError(`expected a QueueDescription (namespace ${SB_NS}), got <${description.name.slice(0, 64)}>`);
  }

  const properties: Partial<QueueProperties> = {};
  const request: QueueRequest = { properties };
  for (const field of description.children) {
    if (field.ns !== SB_NS) continue;
    const text = field.text;
    const present = text.trim() !== '';
    switch (field.name) {
      case 'LockDuration':
        properties.lockDurationMs = parseDuration(text, 'LockDuration');
        break;
      case 'MaxSizeInMegabytes':
        properties.maxSizeInMegabytes = parseInteger(text, 'MaxSizeInMegabytes');
        break;
      case 'RequiresDuplicateDetection':
        properties.requiresDuplicateDetection = parseBoolean(text, 'RequiresDuplicateDetection');
        break;
      case 'DefaultMessageTimeToLive':
        properties.defaultMessageTimeToLiveMs = parseDuration(text, 'DefaultMessageTimeToLive');
        break;
      case 'DeadLetteringOnMessageExpiration':
        properties.deadLetteringOnMessageExpiration = parseBoolean(text, 'DeadLetteringOnMessageExpiration');
        break;
      case 'DuplicateDetectionHistoryTimeWindow':
        properties.duplicateDetectionHistoryTimeWindowMs = parseDuration(text, 'DuplicateDetectionHistoryTimeWindow');
        break;
      case 'MaxDeliveryCount':
        properties.maxDeliveryCount = parseInteger(text, 'MaxDeliveryCount');
        break;
      case 'UserMetadata':
        request.userMetadata = text;
        break;
      case 'RequiresSession':
        if (parseBoolean(text, 'RequiresSession'))
          throw new AtomError('message sessions (RequiresSession) are not supported by this emulator');
        break;
      case 'EnablePartitioning':
        if (parseBoolean(text, 'EnablePartitioning'))
          throw new AtomError('partitioning (EnablePartitioning) is not supported by this emulator');
        break;
      case 'ForwardTo':
      case 'ForwardDeadLetteredMessagesTo':
        if (present) throw new AtomError(`auto-forwarding (${field.name}) is not supported by this emulator`);
        break;
      case 'AutoDeleteOnIdle':
        if (parseDuration(text, 'AutoDeleteOnIdle') !== Infinity) {
          throw new AtomError(`AutoDeleteOnIdle is not supported by this emulator (only ${NEVER_DURATION}, never)`);
        }
        break;
      case 'Status':
        if (present && text.trim() !== 'Active')
          throw new AtomError(`Status "${text.slice(0, 32)}" is not supported by this emulator (only Active)`);
        break;
      case 'AuthorizationRules':
        if (field.children.length > 0)
          throw new AtomError('entity-level AuthorizationRules are not supported by this emulator (the namespace key applies)');
        break;
      case 'EnableBatchedOperations':
        parseBoolean(text, 'EnableBatchedOperations');
        break;
      case 'EnableExpress':
        parseBoolean(text, 'EnableExpress');
        break;
      case 'MaxMessageSizeInKilobytes':
        parseInteger(text, 'MaxMessageSizeInKilobytes');
        break;
      default:
        // Read-only runtime fields (SizeInBytes, CountDetails, CreatedAt, …) and fields of later
        // API versions are ignored, as the service ignores what it does not know.
        break;
    }
  }
  return request;
}

// ---------------------------------------------------------------------------------------------
// Encoding

export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);
}

const DECLARATION = '<?xml version="1.0" encoding="utf-8"?>';

function el(name: string, value: string | number | boolean): string {
  return `<${name}>${escapeXml(String(value))}</${name}>`;
}

/** Where entries point: `https://<host>/<path>?api-version=…`, only the path of which the client reads. */
export interface AtomContext {
  /** Authority shown in ids and links (the namespace host). */
  host: string;
  apiVersion: string;
  /** Time written in `updated` of feeds. */
  now: Date;
}

function entityUrl(ctx: AtomContext, path: string, query = ''): string {
  const encodedPath = path
    .split('/')
    .map((segment) => encodeURIComponent(segment).replace(/%24/g, '$'))
    .join('/');
  return `https://${ctx.host}/${encodedPath}?${query}api-version=${encodeURIComponent(ctx.apiVersion)}`;
}

/** The `<QueueDescription>` of a queue, in the element order of the service. */
function queueDescription(info: QueueInfo, userMetadata: string | undefined): string {
  const p = info.properties;
  const c = info.counts;
  return (
    `<QueueDescription xmlns="${SB_NS}" xmlns:i="${XSI_NS}">` +
    el('LockDuration', formatDuration(p.lockDurationMs)) +
    el('MaxSizeInMegabytes', p.maxSizeInMegabytes) +
    el('RequiresDuplicateDetection', p.requiresDuplicateDetection) +
    el('RequiresSession', false) +
    el('DefaultMessageTimeToLive', formatDuration(p.defaultMessageTimeToLiveMs)) +
    el('DeadLetteringOnMessageExpiration', p.deadLetteringOnMessageExpiration) +
    el('DuplicateDetectionHistoryTimeWindow', formatDuration(p.duplicateDetectionHistoryTimeWindowMs)) +
    el('MaxDeliveryCount', p.maxDeliveryCount) +
    el('EnableBatchedOperations', true) +
    el('SizeInBytes', c.sizeInBytes) +
    el('MessageCount', c.total) +
    el('IsAnonymousAccessible', false) +
    '<AuthorizationRules/>' +
    el('Status', 'Active') +
    (userMetadata !== undefined && userMetadata !== '' ? el('UserMetadata', userMetadata) : '') +
    el('CreatedAt', info.createdAt.toISOString()) +
    el('UpdatedAt', info.updatedAt.toISOString()) +
    el('AccessedAt', info.accessedAt.toISOString()) +
    el('SupportOrdering', true) +
    `<CountDetails xmlns:d2p1="${COUNTS_NS}">` +
    el('d2p1:ActiveMessageCount', c.active) +
    el('d2p1:DeadLetterMessageCount', c.deadLetter) +
    el('d2p1:ScheduledMessageCount', c.scheduled) +
    el('d2p1:TransferMessageCount', 0) +
    el('d2p1:TransferDeadLetterMessageCount', 0) +
    '</CountDetails>' +
    el('AutoDeleteOnIdle', NEVER_DURATION) +
    el('EnablePartitioning', false) +
    el('EntityAvailabilityStatus', 'Available') +
    el('EnableExpress', false) +
    el('MaxMessageSizeInKilobytes', 256) +
    '</QueueDescription>'
  );
}

function queueEntryBody(ctx: AtomContext, info: QueueInfo, userMetadata: string | undefined): string {
  const url = entityUrl(ctx, info.name);
  return (
    el('id', url) +
    `<title type="text">${escapeXml(info.name)}</title>` +
    el('published', info.createdAt.toISOString()) +
    el('updated', info.updatedAt.toISOString()) +
    `<author>${el('name', ctx.host)}</author>` +
    `<link rel="self" href="${escapeXml(url)}"/>` +
    `<content type="application/xml">${queueDescription(info, userMetadata)}</content>`
  );
}

/** One queue as an ATOM entry document (the answer to get, create and update). */
export function encodeQueueEntry(ctx: AtomContext, info: QueueInfo, userMetadata?: string): string {
  return `${DECLARATION}<entry xmlns="${ATOM_NS}">${queueEntryBody(ctx, info, userMetadata)}</entry>`;
}

/** A page of queues as an ATOM feed; `next` gives the `$skip`/`$top` of the following page, if any. */
export function encodeQueueFeed(
  ctx: AtomContext,
  queues: { info: QueueInfo; userMetadata?: string | undefined }[],
  next?: { skip: number; top: number },
): string {
  const self = entityUrl(ctx, '$Resources/Queues');
  // Two <link>s (self, next) so that the client's reader sees a list and finds `next`.
  const nextLink = next
    ? `<link rel="next" href="${escapeXml(entityUrl(ctx, '$Resources/Queues', `%24skip=${next.skip}&%24top=${next.top}&`))}"/>`
    : '';
  return (
    `${DECLARATION}<feed xmlns="${ATOM_NS}">` +
    `<title type="text">Queues</title>` +
    el('id', self) +
    el('updated', ctx.now.toISOString()) +
    `<link rel="self" href="${escapeXml(self)}"/>` +
    nextLink +
    queues.map((q) => `<entry>${queueEntryBody(ctx, q.info, q.userMetadata)}</entry>`).join('') +
    '</feed>'
  );
}

/** The namespace (`$namespaceinfo`) as an ATOM entry. */
export function encodeNamespaceEntry(ctx: AtomContext, namespace: { name: string; createdAt: Date }): string {
  const url = entityUrl(ctx, '$namespaceinfo');
  return (
    `${DECLARATION}<entry xmlns="${ATOM_NS}">` +
    el('id', url) +
    `<title type="text">${escapeXml(namespace.name)}</title>` +
    el('updated', ctx.now.toISOString()) +
    `<author>${el('name', namespace.name)}</author>` +
    `<link rel="self" href="${escapeXml(url)}"/>` +
    `<content type="application/xml"><NamespaceInfo xmlns="${SB_NS}" xmlns:i="${XSI_NS}">` +
    el('CreatedTime', namespace.createdAt.toISOString()) +
    el('MessagingSKU', 'Standard') +
    el('ModifiedTime', namespace.createdAt.toISOString()) +
    el('Name', namespace.name) +
    el('NamespaceType', 'Messaging') +
    '</NamespaceInfo></content></entry>'
  );
}

/** The error document of the service: `<Error><Code>status</Code><Detail>…</Detail></Error>`; the client shows `Detail`. */
export function encodeError(status: number, detail: string): string {
  return `${DECLARATION}<Error>${el('Code', status)}${el('Detail', detail)}</Error>`;
}
