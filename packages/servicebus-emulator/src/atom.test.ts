import { describe, expect, it } from '@jest/globals';
import { AtomError, decodeQueueDescription, formatDuration, NEVER_DURATION, parseDuration, parseXml } from './atom';

const entry = (fields: string): string =>
  '<?xml version="1.0" encoding="utf-8"?>\n<entry xmlns="http://www.w3.org/2005/Atom">\n  <content type="application/xml">\n' +
  `    <q:QueueDescription xmlns:q="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">${fields}</q:QueueDescription>\n` +
  '  </content>\n</entry>';

describe('durations', () => {
  it('reads and writes what .NET writes for a TimeSpan, with TimeSpan.MaxValue as never', () => {
    const cases: [string, number][] = [
      ['PT1M', 60_000],
      ['PT30S', 30_000],
      ['PT0.5S', 500],
      ['PT2M30S', 150_000],
      ['P14D', 14 * 86_400_000],
      ['P1DT2H', 26 * 3_600_000],
      ['PT0S', 0],
    ];
    for (const [text, ms] of cases) {
      expect(parseDuration(text, 'X')).toBe(ms);
      expect(formatDuration(ms)).toBe(text);
    }
    expect(parseDuration(NEVER_DURATION, 'X')).toBe(Infinity);
    expect(formatDuration(Infinity)).toBe(NEVER_DURATION);
    expect(parseDuration('P1W', 'X')).toBe(7 * 86_400_000);
    expect(parseDuration('P1Y', 'X')).toBe(365 * 86_400_000);
    for (const bad of ['', 'P', 'PT', 'P1DT', '60', '-PT1M', 'PT1.S', '00:01:00']) {
      expect(() => parseDuration(bad, 'LockDuration')).toThrow(AtomError);
    }
  });
});

describe('XML reader', () => {
  it('resolves namespaces and prefixes, decodes entities and CDATA, skips comments and whitespace', () => {
    const root = parseXml(
      '<?xml version="1.0"?><!-- c --><a xmlns="urn:a" xmlns:b="urn:b" b:at="1&amp;2"><b:c>x &lt;&#65;&#x42;&gt; <![CDATA[<raw>]]></b:c><d/></a>\n',
    );
    expect(root).toMatchObject({ name: 'a', ns: 'urn:a' });
    expect(root.attributes.get('{urn:b}at')).toBe('1&2');
    expect(root.children.map((c) => [c.name, c.ns, c.text])).toEqual([
      ['c', 'urn:b', 'x <AB> <raw>'],
      ['d', 'urn:a', ''],
    ]);
  });

  it('refuses malformed documents with the offset of the problem', () => {
    for (const bad of [
      '',
      'text',
      '<a>',
      '<a></b>',
      '<a/><b/>',
      '<a x=1/>',
      '<a>&bogus;</a>',
      '<a>& </a>',
      '<p:a/>',
      '<!DOCTYPE a><a/>',
      `${'<a>'.repeat(40)}`,
    ]) {
      expect(() => parseXml(bad)).toThrow(/malformed XML/);
    }
  });
});

describe('queue description', () => {
  it('reads the fields by name, whatever the order and the prefix, ignoring read-only ones', () => {
    const request = decodeQueueDescription(
      entry(
        '<q:MaxDeliveryCount> 3 </q:MaxDeliveryCount><q:LockDuration>PT45S</q:LockDuration><q:SizeInBytes>99</q:SizeInBytes><q:UserMetadata>m</q:UserMetadata>',
      ),
    );
    expect(request).toEqual({ properties: { maxDeliveryCount: 3, lockDurationMs: 45_000 }, userMetadata: 'm' });
  });

  it('refuses other entities, a missing description and bad values', () => {
    expect(() => decodeQueueDescription(entry('').replace(/QueueDescription/g, 'TopicDescription'))).toThrow(/topics are not supported/);
    expect(() => decodeQueueDescription('<entry xmlns="http://www.w3.org/2005/Atom"/>')).toThrow(/no <content>/);
    expect(() => decodeQueueDescription('<QueueDescription/>')).toThrow(/ATOM <entry>/);
    expect(() => decodeQueueDescription(entry('<q:RequiresDuplicateDetection>yes</q:RequiresDuplicateDetection>'))).toThrow(
      /not true or false/,
    );
    expect(() => decodeQueueDescription(entry('<q:Status>Disabled</q:Status>'))).toThrow(/only Active/);
  });
});
