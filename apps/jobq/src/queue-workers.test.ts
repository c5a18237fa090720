import { describe, expect, it } from '@jest/globals';
import { QueueWorkerPool } from './queue-workers';

/** A pool whose keys drop an `ACCOUNT/` prefix (as the dev stack maps every account onto its own). */
function pool(options: { failOn?: string } = {}) {
  const starts: string[] = [];
  const errors: string[] = [];
  const pending: Array<() => void> = [];
  const workers = new QueueWorkerPool({
    key: (spec) => {
      if (spec.includes('_')) throw new Error(`bad queue name ${spec}`);
      return spec.split('/').at(-1)!;
    },
    start: (spec) => {
      starts.push(spec);
      if (spec === options.failOn) return Promise.reject(new Error(`no worker for ${spec}`));
      return new Promise<void>((resolve) => pending.push(resolve));
    },
    onError: (error, spec) => errors.push(`${spec}: ${error.message}`),
  });
  return { workers, starts, errors, release: () => pending.splice(0).forEach((resolve) => resolve()) };
}

describe('QueueWorkerPool', () => {
  it('starts the workers of a queue once, whichever spec names it and however often it is asked', async () => {
    const { workers, starts, release } = pool();
    workers.ensure('cpu');
    workers.ensure('cpu');
    workers.ensure('devstoreaccount1/cpu');
    const added = workers.add('other/cpu');
    workers.ensure('gpu');
    expect(starts).toEqual(['cpu', 'gpu']);
    expect(workers.queues).toEqual(['cpu', 'gpu']);
    release();
    expect(await added).toBe(false);
  });

  it('add() resolves true once the workers it started run', async () => {
    const { workers, starts, release } = pool();
    const first = workers.add('gpu');
    release();
    expect(await first).toBe(true);
    expect(starts).toEqual(['gpu']);
  });

  it('leaves a spec that names no queue to the dispatch, and reports a failed start', async () => {
    const { workers, starts, errors } = pool({ failOn: 'broken' });
    workers.ensure('Bad_Name');
    workers.ensure('broken');
    await new Promise((resolve) => setImmediate(resolve));
    expect(starts).toEqual(['broken']);
    expect(errors).toEqual(['broken: no worker for broken']);
  });
});
