/**
 * Part 2 of the scale bench: what one save of a batch of 32 completions writes to blob storage, and
 * the coordinator-side CPU of a batch (fold + save: encoding, SDK, task rows), on a wide workflow of
 * 1k and 100k tasks, against Azurite in a child process.
 */
import { foldEvents, reduce, type CompletionEvent } from '@jobq/dag-core';
import { definitionHash } from '@jobq/coordinator';
import { startAzuriteProcess } from '@jobq/local';
import { openWorkflowStore, type OpenWorkflowStoreOptions } from '@jobq/store-azure';
import { median, progress, table } from './report';
import { T_RUN, activated, definitionOf, queueDispatches } from './shapes';

type BlobPolicy = NonNullable<OpenWorkflowStoreOptions['blobPolicies']>[number];

const BATCHES = 40;

/** Bytes of blob writes by kind: appends to a log, snapshots, and whole-blob uploads (heads, old-format runtimes, definitions). */
class WriteBytes {
  append = 0;
  snapshot = 0;
  put = 0;
  reset(): void {
    this.append = this.snapshot = this.put = 0;
  }
  policy(): BlobPolicy {
    return {
      create: (next) => ({
        sendRequest: (request) => {
          if (request.method === 'PUT') {
            const length = Number(request.headers.get('Content-Length') ?? 0);
            const url = request.url;
            if (url.includes('comp=appendblock')) this.append += length;
            else if (/\/state\/[^?]*snapshot/.test(url)) this.snapshot += length;
            else if (!url.includes('comp=')) this.put += length;
          }
          return next.sendRequest(request);
        },
      }),
    };
  }
}

interface FlushCase {
  n: number;
  bytes: number[];
  snapshotBytes: number;
  cpuMs: number[];
  loadMs: number;
}

const completion = (taskName: string): CompletionEvent => ({
  type: 'completion',
  now: T_RUN,
  taskName,
  attemptNo: 1,
  success: true,
  outputRef: '{"ok":true}',
  error: null,
});

async function flushCase(connectionString: string, n: number): Promise<FlushCase> {
  const counter = new WriteBytes();
  const prefix = `Flush${n}`;
  const store = await openWorkflowStore({ connection: { connectionString }, prefix, blobPolicies: [counter.policy()] });
  const definition = definitionOf('wide', n);
  const start = activated(definition);
  // The workflow as submitted, then activated and its root completed (every leaf dispatched).
  const created = await store.create(reduce(start.runtime, { type: 'activate', now: T_RUN }).runtime, definitionHash(definition));
  let runtime = start.runtime;
  const root = start.queue.shift()!;
  const afterRoot = reduce(runtime, completion(root));
  queueDispatches(afterRoot.effects, start.queue);
  let etag = (await store.save(afterRoot.runtime, created.etag, { previous: runtime })).etag;
  runtime = afterRoot.runtime;
  counter.reset();
  const bytes: number[] = [];
  const cpuMs: number[] = [];
  let snapshotBytes = 0;
  for (let b = 0; b < BATCHES; b++) {
    const events: CompletionEvent[] = [];
    for (let i = 0; i < 32; i++) {
      const name = start.queue.shift();
      if (name !== undefined) events.push(completion(name));
    }
    const cpu = process.cpuUsage();
    const folded = foldEvents(runtime, events);
    const saved = await store.save(folded.runtime, etag, { previous: runtime });
    const used = process.cpuUsage(cpu);
    cpuMs.push((used.user + used.system) / 1000);
    runtime = folded.runtime;
    etag = saved.etag;
    bytes.push(counter.append + counter.put);
    snapshotBytes += counter.snapshot;
    counter.reset();
  }
  const fresh = await openWorkflowStore({ connection: { connectionString }, prefix, createIfMissing: false });
  const t0 = performance.now();
  await fresh.load(runtime.workflowId);
  const loadMs = performance.now() - t0;
  await store.deleteStorage();
  return { n, bytes, snapshotBytes, cpuMs, loadMs };
}

export async function flushBytes(): Promise<void> {
  progress('flush: starting Azurite in a child process');
  const azurite = await startAzuriteProcess();
  try {
    const cases: FlushCase[] = [];
    for (const n of [1_000, 100_000]) {
      progress(`flush: ${BATCHES} saves of 32 completions on a ${n}-task workflow`);
      cases.push(await flushCase(azurite.connectionString, n));
    }
    const rows = cases.map((c) => [
      `${c.n / 1000}k tasks`,
      String(Math.round(median(c.bytes))),
      String(Math.max(...c.bytes)),
      String(c.snapshotBytes),
      median(c.cpuMs).toFixed(1),
      c.loadMs.toFixed(0),
    ]);
    process.stdout.write(
      `\nSaves of a batch of 32 completions (wide workflow, ${BATCHES} batches; bytes of blob writes per save; snapshots apart)\n`,
    );
    process.stdout.write(`${table(['workflow', 'median bytes', 'max bytes', 'snapshot bytes (all)', 'CPU ms/batch', 'load ms'], rows)}\n`);
    const large = cases.find((c) => c.n === 100_000)!;
    process.stdout.write(`flush bytes per batch at 100k tasks: ${Math.round(median(large.bytes))}\n`);
    process.stdout.write(
      `coordinator CPU ms per batch of 32: ${median(cases[0]!.cpuMs).toFixed(1)} at 1k, ${median(large.cpuMs).toFixed(1)} at 100k\n`,
    );
  } finally {
    await azurite.stop();
  }
}
