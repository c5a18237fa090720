/**
 * Child process of the observability bench (`src/obs.ts`): one worker (the real `Worker` and
 * `WorkflowProcessor`, the task a real `bash -c` process) runs one workflow task that writes
 * `--bytes=N` bytes to stdout in lines of 100 bytes, on in-memory queues and stores, then prints
 * this process's own CPU time and peak RSS (`process.resourceUsage()`: the worker only, not the
 * task's processes) and the stored task log's size as one JSON line on stdout.
 */
import { encodeTaskMessage } from '@jobq/dag-core/wire';
import { MemoryOutputStore, MemoryTaskQueue } from '@jobq/memory';
import { Worker, WorkflowProcessor } from '@jobq/worker';
import { failureText } from './report';

async function main(): Promise<void> {
  const bytes = Number((process.argv.find((a) => a.startsWith('--bytes=')) ?? '--bytes=0').slice('--bytes='.length));
  // 99 characters and a newline per line; `head -c` cuts the last line at the exact byte count.
  const cmd = bytes > 0 ? `yes ${'x'.repeat(99)} | head -c ${bytes}` : 'true';
  const queue = new MemoryTaskQueue({ name: 'bench-output', lockDurationInMs: 60_000 });
  const completions = new MemoryTaskQueue({ name: 'bench-completions', lockDurationInMs: 60_000 });
  const outputs = new MemoryOutputStore();
  await queue.send({ body: encodeTaskMessage({ workflowId: 'wf-output', taskName: 'loud', attemptNo: 1, kwargs: { cmd } }) });
  const processor = new WorkflowProcessor({
    outputs,
    completions,
    isCancelled: () => Promise.resolve(false),
    env: { ...process.env, JOBQ_WORKFLOW_PREFIX: 'devstoreaccount1/BenchOutput' },
    killTimeoutInMs: 2_000,
  });
  const worker = new Worker({
    queue,
    numWorkers: 1,
    idleTimeoutInMs: 300,
    receiveWaitInMs: 50,
    maxIdleBackoffInMs: 100,
    log: () => undefined,
    taskLines: () => undefined,
    processors: [processor],
  });
  const t0 = process.hrtime.bigint();
  await worker.run();
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const usage = process.resourceUsage();
  const logs = await outputs.listTaskLogs('wf-output');
  const log = logs[0];
  process.stdout.write(
    `${JSON.stringify({
      bytes,
      seconds,
      cpuSeconds: (usage.userCPUTime + usage.systemCPUTime) / 1e6,
      maxRssMiB: usage.maxRSS / 1024,
      logStoredBytes: log?.size ?? 0,
      logPrintedBytes: log?.metadata?.bytes ?? 0,
      completions: await completions.approximateMessageCount(),
    })}\n`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`output child failed: ${failureText(error)}\n`);
  process.exitCode = 1;
});
