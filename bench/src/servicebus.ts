/**
 * Benchmark of the Service Bus emulator (`@jobq/servicebus-emulator`) in a child process, through
 * the real `@azure/service-bus` SDK: send rates (1 and 32 in flight, single messages and batches of
 * 32), receive(32) + complete rates (1 and 4 receivers, backlogs of 320 and 3 200), renew-lock
 * rate, how long a receive on an empty queue takes to return, and the broker's memory per 10 000
 * queued 1 KiB messages. Plain text tables on stdout, progress on stderr.
 *
 * Usage: node dist/servicebus.js
 */
import { readFileSync } from 'node:fs';
import { ServiceBusClient, type ServiceBusReceivedMessage } from '@azure/service-bus';
import { startServiceBusProcess } from '@jobq/servicebus-emulator';
import { median, percentile, table } from './report';
import { errorMessage } from '@jobq/ports';

function progress(message: string): void {
  process.stderr.write(`[servicebus bench] ${message}\n`);
}

const f = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** Resident memory of a process in bytes (Linux). */
function rssOf(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) * 1024 : Number.NaN;
}

let queueNo = 0;
const nextQueue = () => `bench-${++queueNo}`;

async function sendRate(client: ServiceBusClient, count: number, inFlight: number, batch: number): Promise<number> {
  const sender = client.createSender(nextQueue());
  await sender.sendMessages({ body: 'warm-up' });
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < count) {
        const n = Math.min(batch, count - next);
        next += n;
        if (batch === 1) await sender.sendMessages({ body: 'x'.repeat(64) });
        else await sender.sendMessages(Array.from({ length: n }, () => ({ body: 'x'.repeat(64) })));
      }
    }),
  );
  const rate = count / ((performance.now() - t0) / 1000);
  await sender.close();
  return rate;
}

async function fill(client: ServiceBusClient, queue: string, count: number, bytes = 64): Promise<void> {
  const sender = client.createSender(queue);
  for (let sent = 0; sent < count; sent += 32) {
    await sender.sendMessages(Array.from({ length: Math.min(32, count - sent) }, () => ({ body: 'x'.repeat(bytes) })));
  }
  await sender.close();
}

async function receiveCompleteRate(client: ServiceBusClient, backlog: number, receivers: number): Promise<number> {
  const queue = nextQueue();
  await fill(client, queue, backlog);
  let done = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: receivers }, async () => {
      const receiver = client.createReceiver(queue, { maxAutoLockRenewalDurationInMs: 0 });
      while (done < backlog) {
        const messages = await receiver.receiveMessages(32, { maxWaitTimeInMs: 1_000 });
        if (messages.length === 0) break;
        await Promise.all(messages.map((m) => receiver.completeMessage(m)));
        done += messages.length;
      }
      await receiver.close();
    }),
  );
  return done / ((performance.now() - t0) / 1000);
}

async function renewRate(client: ServiceBusClient, count: number): Promise<number> {
  const queue = nextQueue();
  await fill(client, queue, 32);
  const receiver = client.createReceiver(queue, { maxAutoLockRenewalDurationInMs: 0 });
  const messages: ServiceBusReceivedMessage[] = await receiver.receiveMessages(32, { maxWaitTimeInMs: 2_000 });
  let renewed = 0;
  const t0 = performance.now();
  await Promise.all(
    messages.map(async (m) => {
      while (renewed < count) {
        await receiver.renewMessageLock(m);
        renewed++;
      }
    }),
  );
  const rate = renewed / ((performance.now() - t0) / 1000);
  await receiver.close();
  return rate;
}

async function emptyReceiveTimes(client: ServiceBusClient, rounds: number, waitMs: number): Promise<number[]> {
  const receiver = client.createReceiver(nextQueue());
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    await receiver.receiveMessages(32, { maxWaitTimeInMs: waitMs });
    times.push(performance.now() - t0);
  }
  await receiver.close();
  return times;
}

async function main(): Promise<void> {
  const sb = await startServiceBusProcess();
  const client = new ServiceBusClient(sb.connectionString);
  try {
    progress('sends');
    const sends: string[][] = [];
    for (const [inFlight, batch] of [
      [1, 1],
      [32, 1],
      [1, 32],
      [32, 32],
    ] as const) {
      const rate = await sendRate(client, batch === 1 ? 3_200 : 32_000, inFlight, batch);
      sends.push([`${inFlight} in flight, ${batch === 1 ? 'single messages' : 'batches of 32'}`, f(rate)]);
    }
    process.stdout.write(
      `\nService Bus emulator (child process), through @azure/service-bus\n\nSends (messages/s)\n${table(['mode', 'msg/s'], sends)}\n`,
    );
    process.stdout.write('(a first prototype of the broker: 5–6k sends/s with 32 in flight)\n');

    progress('receive + complete');
    const receives: string[][] = [];
    for (const backlog of [320, 3_200])
      for (const receivers of [1, 4])
        receives.push([String(backlog), String(receivers), f(await receiveCompleteRate(client, backlog, receivers))]);
    process.stdout.write(`\nreceive(32) + complete (messages/s)\n${table(['backlog', 'receivers', 'msg/s'], receives)}\n`);
    process.stdout.write('(a first prototype of the broker: about 520 msg/s receive + complete)\n');

    progress('renew-lock');
    process.stdout.write(`\nrenew-lock: ${f(await renewRate(client, 3_200))} ops/s (32 locks renewed in turn)\n`);

    progress('empty receives');
    const times = await emptyReceiveTimes(client, 20, 200);
    process.stdout.write(
      `empty-queue receive (maxWaitTimeInMs 200) returns after: p50 ${f(median(times))} ms, p99 ${f(percentile(times, 99))} ms\n`,
    );

    progress('memory');
    const before = rssOf(sb.pid);
    await fill(client, nextQueue(), 10_000, 1024);
    const after = rssOf(sb.pid);
    process.stdout.write(
      `broker RSS per 10 000 queued 1 KiB messages: ${f((after - before) / 2 ** 20, 1)} MiB (RSS ${f(before / 2 ** 20)} → ${f(after / 2 ** 20)} MiB)\n`,
    );
  } finally {
    await client.close();
    await sb.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`servicebus bench failed: ${errorMessage(error)}\n`);
  process.exitCode = 1;
});
