/**
 * What the Azure SDK costs the client process per request, and what jobq's pipeline changes save.
 * Two client set-ups run side by side in one process, in alternating rounds (medians reported, so a
 * busy machine drifts both alike):
 *   - `sdk`:  the SDK as it comes: its per-request tracing policy on (JOBQ_AZURE_SDK_TRACING=on)
 *             and a new blob client per call;
 *   - `jobq`: jobq's clients as opened by @jobq/store-azure and @jobq/queue-storage: tracing gated
 *             (no tracer provider registered here), the blob client reused.
 * Part 1 runs the SDK pipelines against a canned in-process answer (no network): the SDK's own CPU
 * per call, and the signing and tracing policies alone on a captured request. Part 2 runs N blob
 * uploads, N task-row merges and N queue sends against Azurite in a child process: client CPU per
 * request (process.cpuUsage, user + system), Azurite's work excluded.
 *
 * Usage: node dist/sdk-overhead.js   (JOBQ_SDK_BENCH_N=2000 requests per operation and set-up)
 */
import { loadavg } from 'node:os';
import { startAzuriteProcess } from '@jobq/local';
import { mapLimit } from '@jobq/ports';
import { openStorageQueue } from '@jobq/queue-storage';
import { accountClients } from '@jobq/store-azure';

const N = Number(process.env.JOBQ_SDK_BENCH_N ?? 2000);
const ROUNDS = 5;
const IN_FLIGHT = 8;
const BODY = Buffer.from(
  JSON.stringify({
    workflow: 'wf-0123456789abcdef',
    tasks: Array.from({ length: 20 }, (_, i) => ({ name: `leaves/leaf-${i}`, state: 'done', attempt: 1 })),
  }),
);
const MESSAGE = JSON.stringify({ v: 1, id: 'wf-0123456789abcdef/leaves/leaf-0001/1', kind: 'completion', exit_code: 0, outputs: {} });

type Setup = 'sdk' | 'jobq';
const SETUPS: readonly Setup[] = ['sdk', 'jobq'];

function log(line: string): void {
  process.stderr.write(`[sdk bench] ${line}\n`);
}

const f = (n: number, digits = 1) => n.toFixed(digits);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

/** Opens the clients of one set-up (the environment variable is read when clients are made). */
async function open(
  setup: Setup,
  connectionString: string,
  names: { container: string; table: string; queue: string },
  createIfMissing = true,
) {
  if (setup === 'sdk') process.env.JOBQ_AZURE_SDK_TRACING = 'on';
  try {
    const clients = accountClients({ connectionString }, { operationTimeoutInMs: 30_000 });
    const queue = await openStorageQueue({ connection: { connectionString }, queueName: names.queue, createIfMissing });
    return { clients, container: clients.container(names.container), table: clients.table(names.table), queue };
  } finally {
    delete process.env.JOBQ_AZURE_SDK_TRACING;
  }
}

type Opened = Awaited<ReturnType<typeof open>>;

/** The operations measured, for one set-up. */
function operations(setup: Setup, o: Opened): Record<string, (i: number) => Promise<unknown>> {
  const reused = o.container.getBlockBlobClient('wf-0123456789abcdef/runtime.log');
  const blob = (i: number) => (setup === 'sdk' ? o.container.getBlockBlobClient(`wf-0123456789abcdef/runtime-${i % 4}.log`) : reused);
  return {
    'blob upload (2 KB)': (i) => blob(i).upload(BODY, BODY.length),
    'task-row merge': (i) =>
      o.table.upsertEntity({ partitionKey: 'wf-0123456789abcdef', rowKey: `leaf-${i % 100}`, state: 'done', attempt: 1 }, 'Merge'),
    'queue send': () => o.queue.send({ body: MESSAGE }),
  };
}

/** CPU µs per call of `op`, `count` calls with IN_FLIGHT at once. */
async function cpuPerCall(op: (i: number) => Promise<unknown>, count: number): Promise<number> {
  const start = process.cpuUsage();
  await mapLimit(
    Array.from({ length: count }, (_, i) => i),
    IN_FLIGHT,
    op,
  );
  const used = process.cpuUsage(start);
  return (used.user + used.system) / count;
}

/** Alternating rounds of every operation of every set-up; median µs per call. */
async function measure(
  ops: Record<Setup, Record<string, (i: number) => Promise<unknown>>>,
  perRound: number,
): Promise<Map<string, Record<Setup, number>>> {
  const samples = new Map<string, Record<Setup, number[]>>();
  for (const setup of SETUPS) for (const op of Object.values(ops[setup])) await cpuPerCall(op, Math.min(200, perRound)); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (const setup of round % 2 === 0 ? SETUPS : [...SETUPS].reverse()) {
      for (const [name, op] of Object.entries(ops[setup])) {
        const entry = samples.get(name) ?? { sdk: [], jobq: [] };
        entry[setup].push(await cpuPerCall(op, perRound));
        samples.set(name, entry);
      }
    }
  }
  return new Map([...samples].map(([name, s]) => [name, { sdk: median(s.sdk), jobq: median(s.jobq) }]));
}

// ---- part 1: the SDK alone (canned answers, no network) ------------------------------------------

interface Policy {
  name: string;
  sendRequest(request: unknown, next: (request: unknown) => Promise<unknown>): Promise<unknown>;
}
interface CorePipeline {
  getOrderedPolicies(): Policy[];
  addPolicy(policy: Policy, options?: { afterPhase?: string; afterPolicies?: string[] }): void;
}

/** The HTTP pipeline under a storage client (see @jobq/azure-pipeline's `storageCorePipeline`). */
function storagePipeline(client: object): CorePipeline {
  return (client as { storageClientContext: { pipeline: CorePipeline } }).storageClientContext.pipeline;
}

/** A last policy that answers every request at once, and keeps the last request it saw. */
function cannedAnswer(status: number, body?: string): Policy & { last: unknown } {
  const headers = new Map<string, string>([
    ['x-ms-request-id', '00000000-0000-0000-0000-000000000000'],
    ['etag', '"0x8DC0000000000"'],
    ['last-modified', 'Mon, 01 Dec 2026 13:00:00 GMT'],
    ['date', 'Mon, 01 Dec 2026 13:00:00 GMT'],
    ...(body ? ([['content-type', 'application/xml']] as [string, string][]) : []),
  ]);
  const answer: Policy & { last: unknown } = {
    name: 'cannedAnswer',
    last: undefined,
    sendRequest(request) {
      answer.last = request;
      const h = new Map(headers);
      return Promise.resolve({
        request,
        status,
        bodyAsText: body,
        headers: {
          get: (n: string) => h.get(n.toLowerCase()),
          has: (n: string) => h.has(n.toLowerCase()),
          set: (n: string, v: string) => void h.set(n.toLowerCase(), v),
          delete: (n: string) => void h.delete(n.toLowerCase()),
          toJSON: () => Object.fromEntries(h),
          [Symbol.iterator]: () => h.entries(),
        },
      });
    },
  };
  return answer;
}

const QUEUE_ANSWER =
  '<?xml version="1.0" encoding="utf-8"?><QueueMessagesList><QueueMessage><MessageId>8d1f1f7e-1c7e-4c1e-9f3e-1d2c3b4a5f6e</MessageId>' +
  '<InsertionTime>Mon, 01 Dec 2026 13:00:00 GMT</InsertionTime><ExpirationTime>Mon, 08 Dec 2026 13:00:00 GMT</ExpirationTime>' +
  '<PopReceipt>AgAAAAMAAAAAAAAA</PopReceipt><TimeNextVisible>Mon, 01 Dec 2026 13:00:00 GMT</TimeNextVisible></QueueMessage></QueueMessagesList>';

/** Puts canned answers at the end of the three pipelines of `o`; the answering policies. */
function answerLocally(o: Opened) {
  const at = { afterPhase: 'Sign', afterPolicies: ['logPolicy'] };
  const blob = cannedAnswer(201);
  const row = cannedAnswer(204);
  const queue = cannedAnswer(201, QUEUE_ANSWER);
  storagePipeline(o.clients.blobService).addPolicy(blob, at);
  (o.table.pipeline as unknown as CorePipeline).addPolicy(row, at);
  storagePipeline((o.queue as unknown as { service: object }).service).addPolicy(queue, at);
  return { blob, row, queue };
}

/** CPU µs per call of one policy on a captured request, the next policy answering at once. */
async function policyCost(policy: Policy, request: unknown, count = 50_000): Promise<number> {
  const next = () => Promise.resolve({ status: 200 });
  for (let i = 0; i < 2_000; i++) await policy.sendRequest(request, next);
  const start = process.cpuUsage();
  for (let i = 0; i < count; i++) await policy.sendRequest(request, next);
  const used = process.cpuUsage(start);
  return (used.user + used.system) / count;
}

const policyNamed = (pipeline: CorePipeline, name: string) => pipeline.getOrderedPolicies().find((p) => p.name === name)!;

async function main(): Promise<void> {
  console.log(
    `Azure SDK overhead per request (client process CPU, µs; median of ${ROUNDS} alternating rounds; load average at start ${load()})`,
  );
  console.log(
    'sdk = the SDK as it comes (tracing policy on, a blob client per call); jobq = jobq clients (tracing gated, blob client reused)\n',
  );

  // Part 1: no network. The connection string names unreachable endpoints: nothing is sent.
  const offline =
    'DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;' +
    'BlobEndpoint=http://127.0.0.1:9/devstoreaccount1;QueueEndpoint=http://127.0.0.1:9/devstoreaccount1;TableEndpoint=http://127.0.0.1:9/devstoreaccount1;';
  const names = { container: 'sdkbench', table: 'sdkbench', queue: 'sdkbench' };
  const local: Record<Setup, Opened> = { sdk: await open('sdk', offline, names, false), jobq: await open('jobq', offline, names, false) };
  const answers = { sdk: answerLocally(local.sdk), jobq: answerLocally(local.jobq) };
  log('part 1: the SDK pipelines against canned answers');
  const alone = await measure({ sdk: operations('sdk', local.sdk), jobq: operations('jobq', local.jobq) }, Math.max(N, 2_000));
  const rows1 = [...alone].map(([name, r]) => [name, f(r.sdk), f(r.jobq), f(r.sdk - r.jobq)]);
  console.log('Part 1: SDK work per call, no network');
  console.log(table(['operation', 'sdk µs', 'jobq µs', 'saved µs'], rows1));

  // The policies alone, on the last request each pipeline sent.
  const sdkBlob = storagePipeline(local.sdk.clients.blobService);
  const sdkTable = local.sdk.table.pipeline as unknown as CorePipeline;
  const blobRequest = answers.sdk.blob.last;
  const rowRequest = answers.sdk.row.last;
  const rows2 = [
    ['Shared Key signing (blob PUT)', f(await policyCost(policyNamed(sdkBlob, 'storageSharedKeyCredentialPolicy'), blobRequest), 2)],
    ['Shared Key Lite signing (table)', f(await policyCost(policyNamed(sdkTable, 'tablesNamedKeyCredentialPolicy'), rowRequest), 2)],
    ['tracing policy, no-op instrumenter (blob PUT)', f(await policyCost(policyNamed(sdkBlob, 'tracingPolicy'), blobRequest), 2)],
    [
      'gated tracing policy, no provider (blob PUT)',
      f(await policyCost(policyNamed(storagePipeline(local.jobq.clients.blobService), 'tracingPolicy'), blobRequest), 2),
    ],
    [
      'a new blob client (getBlockBlobClient)',
      f(
        await policyCost(
          { name: 'x', sendRequest: () => Promise.resolve(local.sdk.container.getBlockBlobClient('wf/runtime.log')) },
          null,
          20_000,
        ),
        2,
      ),
    ],
  ];
  console.log('\nOne step alone, µs per call (a policy includes ~0.1 µs of calling it)');
  console.log(table(['step', 'µs'], rows2));

  // Part 2: Azurite in a child process.
  log('part 2: starting Azurite (child process)');
  const azurite = await startAzuriteProcess();
  try {
    const live: Record<Setup, Opened> = {
      sdk: await open('sdk', azurite.connectionString, { container: 'sdkbench', table: 'sdkbench', queue: 'sdkbench-sdk' }),
      jobq: await open('jobq', azurite.connectionString, { container: 'sdkbench', table: 'sdkbench', queue: 'sdkbench-jobq' }),
    };
    await live.jobq.container.createIfNotExists();
    await live.jobq.table.createTable();
    log(`part 2: ${N} calls per operation and set-up, ${IN_FLIGHT} in flight`);
    const loadBefore = load();
    const azureRows = await measure({ sdk: operations('sdk', live.sdk), jobq: operations('jobq', live.jobq) }, Math.ceil(N / ROUNDS));
    console.log(
      `\nPart 2: against Azurite 3.35.0 (child process), ${N} calls per operation and set-up; load average ${loadBefore} → ${load()}`,
    );
    console.log(
      table(
        ['operation', 'sdk µs', 'jobq µs', 'saved µs', 'saved %'],
        [...azureRows].map(([name, r]) => [name, f(r.sdk), f(r.jobq), f(r.sdk - r.jobq), f((100 * (r.sdk - r.jobq)) / r.sdk)]),
      ),
    );
  } finally {
    await azurite.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
