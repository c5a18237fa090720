import { sleep } from './sleep';

describe('sleep', () => {
  it('ends at once, without rejecting, when its signal fires or has fired, or for no time at all', async () => {
    const controller = new AbortController();
    const waiting = sleep(3_600_000, controller.signal, { unref: true });
    controller.abort();
    await expect(waiting).resolves.toBeUndefined();
    await expect(sleep(3_600_000, controller.signal)).resolves.toBeUndefined();
    await expect(sleep(0)).resolves.toBeUndefined();
    await expect(sleep(Number.NaN)).resolves.toBeUndefined();
  });

  it('waits for its time when nothing aborts it', async () => {
    let done = false;
    const waiting = sleep(5).then(() => (done = true));
    expect(done).toBe(false);
    await waiting;
    expect(done).toBe(true);
  });
});
