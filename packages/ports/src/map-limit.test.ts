import { mapLimit } from './map-limit';

/** A call that settles when the test says so. */
interface Pending {
  item: number;
  resolve: (value: string) => void;
  reject: (error: unknown) => void;
}

/** `fn` for mapLimit whose calls wait in `started` until settled by hand. */
function manual(): { started: Pending[]; fn: (item: number) => Promise<string> } {
  const started: Pending[] = [];
  const fn = (item: number) => new Promise<string>((resolve, reject) => started.push({ item, resolve, reject }));
  return { started, fn };
}

/** Lets settled promises run their continuations. */
const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await Promise.resolve();
};

describe('mapLimit', () => {
  it('resolves to the results in input order, whatever order the calls finish in', async () => {
    const { started, fn } = manual();
    const all = mapLimit([1, 2, 3, 4, 5], 2, fn);
    await turns();
    expect(started.map((p) => p.item)).toEqual([1, 2]);
    started[1]!.resolve('two');
    await turns();
    expect(started.map((p) => p.item)).toEqual([1, 2, 3]);
    started[2]!.resolve('three');
    started[0]!.resolve('one');
    await turns();
    expect(started.map((p) => p.item)).toEqual([1, 2, 3, 4, 5]);
    started[4]!.resolve('five');
    started[3]!.resolve('four');
    await expect(all).resolves.toEqual(['one', 'two', 'three', 'four', 'five']);
  });

  it('never has more than `limit` calls in flight, and passes each item its index', async () => {
    let running = 0;
    let most = 0;
    const seen: Array<[string, number]> = [];
    const results = await mapLimit(['a', 'b', 'c', 'd', 'e', 'f', 'g'], 3, async (item, index) => {
      running++;
      most = Math.max(most, running);
      seen.push([item, index]);
      await turns(index % 3);
      running--;
      return item.toUpperCase();
    });
    expect(results).toEqual(['A', 'B', 'C', 'D', 'E', 'F', 'G']);
    expect(most).toBe(3);
    expect(seen).toEqual(
      expect.arrayContaining([
        ['a', 0],
        ['d', 3],
        ['g', 6],
      ]),
    );
  });

  it('treats a limit below 1 (or not a number) as 1, and an empty list as nothing to do', async () => {
    for (const limit of [0, -3, Number.NaN, 0.5]) {
      const { started, fn } = manual();
      const all = mapLimit([1, 2], limit, fn);
      await turns();
      expect(started).toHaveLength(1);
      started[0]!.resolve('x');
      await turns();
      started[1]!.resolve('y');
      await expect(all).resolves.toEqual(['x', 'y']);
    }
    await expect(mapLimit([], 4, () => Promise.reject(new Error('never called')))).resolves.toEqual([]);
  });

  it('after the first failure starts nothing more, and rejects with it once the calls in flight have settled', async () => {
    const { started, fn } = manual();
    let settled = false;
    const all = mapLimit([1, 2, 3, 4, 5], 2, fn).finally(() => (settled = true));
    all.catch(() => undefined);
    await turns();
    started[0]!.reject(new Error('first'));
    await turns();
    // The call in flight (item 2) is still running: the promise waits for it.
    expect(settled).toBe(false);
    started[1]!.reject(new Error('second'));
    await expect(all).rejects.toThrow('first');
    expect(started.map((p) => p.item)).toEqual([1, 2]);
  });

  it('counts a call that throws at once as a failure', async () => {
    const calls: number[] = [];
    const all = mapLimit([1, 2, 3], 1, (item) => {
      calls.push(item);
      if (item === 2) throw new Error('bad item 2');
      return item;
    });
    await expect(all).rejects.toThrow('bad item 2');
    expect(calls).toEqual([1, 2]);
  });

  it('stops starting calls once its signal fires, and rejects with the reason after those in flight', async () => {
    const { started, fn } = manual();
    const controller = new AbortController();
    let settled = false;
    const all = mapLimit([1, 2, 3, 4], 2, fn, { signal: controller.signal }).finally(() => (settled = true));
    all.catch(() => undefined);
    await turns();
    controller.abort(new Error('stopped'));
    started[0]!.resolve('one');
    await turns();
    expect(settled).toBe(false);
    started[1]!.resolve('two');
    await expect(all).rejects.toThrow('stopped');
    expect(started.map((p) => p.item)).toEqual([1, 2]);

    const before = new AbortController();
    before.abort(new Error('already'));
    const calls: number[] = [];
    await expect(mapLimit([1], 1, (item) => calls.push(item), { signal: before.signal })).rejects.toThrow('already');
    expect(calls).toEqual([]);
  });

  it('resolves when the signal fires after every call has started', async () => {
    const { started, fn } = manual();
    const controller = new AbortController();
    const all = mapLimit([1, 2], 2, fn, { signal: controller.signal });
    await turns();
    controller.abort();
    started[0]!.resolve('one');
    started[1]!.resolve('two');
    await expect(all).resolves.toEqual(['one', 'two']);
  });
});
