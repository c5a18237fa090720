import { describeWorkflowStoreShardContract } from '@jobq/ports/testing';
import { MemoryWorkflowStore } from './workflow-store';

describeWorkflowStoreShardContract('in memory', () => {
  const store = new MemoryWorkflowStore();
  return Promise.resolve({
    store,
    simulateOrphan: (workflowId: string) => Promise.resolve(store.dropIndexRow(workflowId)),
    dispose: () => Promise.resolve(),
  });
});
