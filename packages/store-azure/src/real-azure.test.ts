// The workflow-store and output-store contract suites against a real storage account, when
// JOBQ_TEST_AZURE_STORAGE_CONNECTION_STRING holds its connection string (account key or SAS).
// Every store gets a random prefix of its own (containers and tables), removed after each test.
// Without the variable this file prints one line and runs nothing else.
import { it } from '@jest/globals';
import { describeOutputStoreContract, describeWorkflowStoreContract } from '@jobq/ports/testing';
import { outputStoreFixture, workflowStoreFixture } from './test-helpers/contract-fixtures';

const VARIABLE = 'JOBQ_TEST_AZURE_STORAGE_CONNECTION_STRING';
const connectionString = process.env[VARIABLE]?.trim() ?? '';

if (connectionString === '') {
  it(`skips the real Azure Storage checks without ${VARIABLE}`, () => {
    process.stdout.write(`real Azure Storage checks skipped: ${VARIABLE} not set\n`);
  });
} else {
  const options = { timeoutInMs: 120_000 };
  describeWorkflowStoreContract(
    'Azure Storage (real account)',
    () => workflowStoreFixture(connectionString, { operationTimeoutInMs: 30_000 }),
    options,
  );
  describeOutputStoreContract(
    'Azure Blob Storage (real account)',
    () => outputStoreFixture(connectionString, { operationTimeoutInMs: 30_000 }),
    options,
  );
}
