// A worker of a test stack in a process of its own, so that a test can SIGKILL it
// mid-task (see `Stack.spawnWorker` in ./stack.ts). It runs the built packages (dist), as
// `jobq worker` does. Its settings come as JSON in JOBQ_TEST_WORKER_CONFIG; it prints `ready` once
// its queues are open and its worker runs, then one line per worker log line.
'use strict';

const { Worker, WorkflowProcessor, ShellProcessor, cancelCheckFromStore } = require('@jobq/worker');
const { openOutputStore, openWorkflowStore } = require('@jobq/store-azure');

const config = JSON.parse(process.env.JOBQ_TEST_WORKER_CONFIG);
const storage = { connectionString: config.storageConnectionString };

async function openQueue(queueName) {
  if (config.queues === 'servicebus') {
    const { openServiceBusQueue } = require('@jobq/queue-servicebus');
    const { adminPolicy } = require('@jobq/servicebus-emulator');
    return openServiceBusQueue({
      connection: { connectionString: config.serviceBusConnectionString },
      queueName,
      lockDurationInMs: config.lockDurationInMs,
      adminPolicies: [adminPolicy(config.serviceBusAdminEndpoint)],
    });
  }
  const { openStorageQueue } = require('@jobq/queue-storage');
  return openStorageQueue({ connection: storage, queueName, lockDurationInMs: config.lockDurationInMs });
}

async function main() {
  const store = await openWorkflowStore({ connection: storage, prefix: config.prefix, createIfMissing: false });
  const outputs = await openOutputStore({ connection: storage, prefix: config.prefix });
  const completions = await openQueue(config.completionQueue);
  const queue = await openQueue(config.taskQueue);
  const worker = new Worker({
    queue,
    numWorkers: config.numWorkers,
    receiveWaitInMs: 50,
    maxIdleBackoffInMs: 100,
    gracePeriodInMs: 0,
    log: (line) => process.stdout.write(`${line}\n`),
    processors: [
      new WorkflowProcessor({
        outputs,
        completions,
        isCancelled: cancelCheckFromStore(store),
        env: {
          ...process.env,
          JOBQ_TEST_WORKER_CONFIG: '',
          JOBQ_WORKFLOW_PREFIX: `devstoreaccount1/${config.prefix}`,
          JOBQ_STORAGE_CONNECTION_STRING: config.storageConnectionString,
        },
        killTimeoutInMs: 2_000,
        completionBackoff: { initialInMs: 20, maxInMs: 100 },
        cancelPollIntervalInMs: 200,
        cancelPollJitter: 0,
      }),
      new ShellProcessor({ killTimeoutInMs: 2_000 }),
    ],
  });
  const running = worker.run();
  process.stdout.write('ready\n');
  await running;
}

main().catch((error) => {
  process.stderr.write(`worker process failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
