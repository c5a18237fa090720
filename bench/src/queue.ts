/**
 * Benchmark of the Storage Queue backend against Azurite in a child process (so the server has a
 * core of its own): storage transactions per message for send, receive, renew and complete,
 * counted by an SDK pipeline policy (exact, not timed), then raw send and receive+complete
 * throughput. Plain text tables on stdout, progress on stderr.
 *
 * Usage: node dist/queue.js [--messages=3200]
 */
import { startAzuriteProcess } from '@jobq/local';
import { countingPolicy, openStorageQueue, type StorageTaskQueue, type TransactionCounter } from '@jobq/queue-storage';
import { errorMessage } from '@jobq/ports';

let messages = 3200;
for (const arg of process.argv.slice(2)) {
  const [key, value] = arg.split('=');
  if (key === '--messages' && value) messages = Number(value);
}

function log(line: string): void {
  process.stderr.write(`[queue bench] ${line}\n`);
}

function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

const f = (n: number, digits = 2) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

async function drain(queue: StorageTaskQueue, expected: number, receivers: number): Promise<number> {
  let received = 0;
  const worker = async () => {
    let empty = 0;
    while (received < expected && empty < 3) {
      const batch = await queue.receive({ maxMessages: 32, maxWaitTimeInMs: 500 });
      if (batch.length === 0) {
        empty++;
        continue;
      }
      empty = 0;
      received += batch.length;
      await Promise.all(batch.map((m) => queue.complete(m)));
    }
  };
  await Promise.all(Array.from({ length: receivers }, worker));
  return received;
}

async function transactions(queue: StorageTaskQueue, counter: TransactionCounter): Promise<string[][]> {
  const n = 320;
  const rows: string[][] = [];
  const measure = async (what: string, per: number, fn: () => Promise<unknown>) => {
    counter.reset();
    await fn();
    rows.push([what, String(per), String(counter.total), f(counter.total / per)]);
  };
  const bodies = Array.from({ length: n }, (_, i) => ({
    body: JSON.stringify({ version: 1, id: `m${i}`, kwargs: '{"cmd":"true"}', num_retries: 0 }),
  }));
  await measure('send (batch of 320)', n, () => queue.send(bodies));
  const held: Awaited<ReturnType<StorageTaskQueue['receive']>> = [];
  await measure('receive (32 per call)', n, async () => {
    while (held.length < n) held.push(...(await queue.receive({ maxMessages: 32, maxWaitTimeInMs: 1_000 })));
  });
  await measure('renew lock', n, () => Promise.all(held.map((m) => queue.renewLock(m))));
  await measure('complete', n, () => Promise.all(held.map((m) => queue.complete(m))));
  await measure('receive on an empty queue (1 s wait)', 1, () => queue.receive({ maxMessages: 32, maxWaitTimeInMs: 1_000 }));
  return rows;
}

async function main(): Promise<void> {
  const started = Date.now();
  log('starting Azurite in a child process');
  const azurite = await startAzuriteProcess();
  try {
    const { policy, counter } = countingPolicy();
    const connection = { connectionString: azurite.connectionString };
    const counted = await openStorageQueue({ connection, queueName: 'bench-transactions', lockDurationInMs: 60_000, policies: [policy] });
    log('counting transactions');
    const txRows = await transactions(counted, counter);

    const rows: string[][] = [];
    for (const receivers of [1, 4]) {
      const queue = await openStorageQueue({ connection, queueName: `bench-throughput-${receivers}`, lockDurationInMs: 60_000 });
      const bodies = Array.from({ length: messages }, (_, i) => ({
        body: JSON.stringify({ version: 1, id: `t${i}`, kwargs: '{"cmd":"true"}', num_retries: 0 }),
      }));
      log(`sending ${messages} messages (16 in flight)`);
      let t0 = process.hrtime.bigint();
      await queue.send(bodies);
      const sendS = Number(process.hrtime.bigint() - t0) / 1e9;
      log(`receiving + completing with ${receivers} receiver(s)`);
      t0 = process.hrtime.bigint();
      const got = await drain(queue, messages, receivers);
      const drainS = Number(process.hrtime.bigint() - t0) / 1e9;
      rows.push([`${receivers} receiver(s)`, String(messages), f(messages / sendS, 0), String(got), f(got / drainS, 0)]);
      await queue.deleteQueue();
    }
    await counted.deleteQueue();

    console.log('jobq Storage Queue benchmark (@jobq/queue-storage against Azurite 3.35.0, patched, in a child process)');
    console.log(`node ${process.version}; bodies are ~80-byte JSON envelopes; 16 sends in flight; receive takes 32 per call.\n`);
    console.log('1. Storage transactions per message (counted by an SDK pipeline policy: one per request; no faults here, so no retries)');
    console.log(table(['operation', 'messages', 'transactions', 'per message'], txRows));
    console.log('   A workflow task moves two messages (its task message and its completion): about 2 x (1 + 1/32 + 1) = 4.1 queue');
    console.log('   transactions, plus one per lock renewal; an idle receiver polling with back-off costs a few transactions a second.\n');
    console.log('2. Throughput (messages per second; one run, expect ±20 % on a shared machine)');
    console.log(table(['receive side', 'sent', 'send msg/s', 'received', 'receive+complete msg/s'], rows));
    console.log(`\nTotal queue bench time ${f((Date.now() - started) / 1000, 1)} s.`);
  } finally {
    await azurite.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`queue bench failed: ${errorMessage(error)}\n`);
  process.exitCode = 1;
});
