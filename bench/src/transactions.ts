import type { OpenWorkflowStoreOptions, TablePipelinePolicy } from '@jobq/store-azure';

type BlobPolicy = NonNullable<OpenWorkflowStoreOptions['blobPolicies']>[number];

/** Every HTTP request the store sends (each a billed transaction), by kind. */
export class StoreTransactions {
  blob = 0;
  index = 0;
  taskBatches = 0;
  otherTable = 0;

  get total(): number {
    return this.blob + this.table;
  }

  /** Every table request: index, task-row batches and the rest. */
  get table(): number {
    return this.index + this.taskBatches + this.otherTable;
  }

  reset(): void {
    this.blob = this.index = this.taskBatches = this.otherTable = 0;
  }

  /** Below the blob retry policy: every try is seen. */
  blobPolicy(): BlobPolicy {
    return {
      create: (next) => ({
        sendRequest: (request) => {
          this.blob++;
          return next.sendRequest(request);
        },
      }),
    };
  }

  /** After the table retry policy: every try is seen. */
  tablePolicy(): TablePipelinePolicy {
    return {
      name: 'bench-transaction-counter',
      sendRequest: (request, next) => {
        if (request.url.includes('$batch')) this.taskBatches++;
        else if (/WorkflowsIndex/.test(request.url)) this.index++;
        else this.otherTable++;
        return next(request);
      },
    };
  }
}
