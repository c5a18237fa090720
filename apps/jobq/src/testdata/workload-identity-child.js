// Run by workload-identity.test.ts in a child process (NODE_EXTRA_CA_CERTS is read at start-up):
// blob, queue and table clients on the sink's endpoints with the CLI's process credential, one
// request each. Prints one JSON line: the result of each request.
'use strict';
const { join } = require('node:path');
const app = join(__dirname, '..', '..');
const { azureCredential } = require(join(app, 'dist', 'credential.js'));
const { accountClients } = require(require.resolve('@jobq/store-azure', { paths: [app] }));
const { createQueueServiceClient } = require(require.resolve('@jobq/queue-storage', { paths: [app] }));

async function main() {
  const sink = process.argv[2];
  const credential = azureCredential();
  const clients = accountClients({ blobServiceUrl: `${sink}/blob`, tableServiceUrl: `${sink}/table`, credential }, { operationTimeoutInMs: 10_000 });
  const queues = createQueueServiceClient({ queueServiceUrl: `${sink}/queue`, credential }, { retryOptions: { maxTries: 1 } });
  const outcome = async (call) => {
    try {
      await call();
      return 'ok';
    } catch (error) {
      return `${error.name}: ${String(error.message).split('\n')[0]}`;
    }
  };
  const result = {
    blob: await outcome(() => clients.container('jobq-test').getProperties()),
    queue: await outcome(() => queues.getQueueClient('jobq-test').getProperties()),
    table: await outcome(() => clients.table('JobqTest').getEntity('p', 'r')),
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exit(1);
});
