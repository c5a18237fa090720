import { describe, expect, it } from '@jest/globals';
import { ClientCache } from './client-cache';

describe('ClientCache', () => {
  it('makes one client per name and hands it out again', () => {
    const made: string[] = [];
    const cache = new ClientCache((name) => {
      made.push(name);
      return { name };
    });
    const head = cache.get('wf.json');
    expect(cache.get('wf.json')).toBe(head);
    expect(cache.get('wf/log-1')).not.toBe(head);
    expect(made).toEqual(['wf.json', 'wf/log-1']);
  });

  it('keeps at most `capacity` clients, dropping the oldest', () => {
    const made: string[] = [];
    const cache = new ClientCache((name) => {
      made.push(name);
      return { name };
    }, 2);
    const a = cache.get('a');
    cache.get('b');
    cache.get('c');
    expect(cache.size).toBe(2);
    expect(cache.get('c')).toEqual({ name: 'c' });
    expect(cache.get('a')).not.toBe(a);
    expect(made).toEqual(['a', 'b', 'c', 'a']);
  });
});
