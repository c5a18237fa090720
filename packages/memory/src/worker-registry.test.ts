import { VirtualClock } from '@jobq/ports';
import { describeWorkerRegistryContract } from '@jobq/ports/testing';
import { MemoryWorkerRegistry } from './worker-registry';

describeWorkerRegistryContract('in memory', () => {
  const clock = new VirtualClock();
  return Promise.resolve({
    registry: new MemoryWorkerRegistry({ clock }),
    advance: (ms: number) => clock.advance(ms),
    dispose: () => Promise.resolve(),
  });
});
