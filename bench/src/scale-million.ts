/**
 * Part 3 of the scale bench: a 1 000 000-task workflow (root → 999 998 leaves → sink, submitted with
 * `--max-fan-in 1000`) driven through the real `Coordinator` on the in-memory adapters, with a
 * "worker" loop that answers every task message with a success completion as fast as the
 * coordinator takes them. Prints completions/s and peak RSS, and checks that nothing was lost: the
 * final runtime has every task completed, each at attempt 1.
 */
import { tasksIn, validateWorkflow } from '@jobq/dag-core';
import { decodeEnvelope, decodeWorkflowTask, encodeCompletion } from '@jobq/dag-core/wire';
import { Coordinator, WorkflowClient } from '@jobq/coordinator';
import { MemoryOutputStore, MemoryTaskQueue, MemoryWorkflowStore } from '@jobq/memory';
import { progress } from './report';

const TASKS = Number(process.env.JOBQ_SCALE_MILLION_TASKS ?? 1_000_000);

function definition() {
  const leaves = Array.from({ length: TASKS - 2 }, (_, i) => `leaf-${i}`);
  const raw = {
    name: 'million',
    tasks: [
      { name: 'root', kwargs: { cmd: ':' } },
      ...leaves.map((name) => ({ name, depends_on: ['root'], kwargs: { cmd: ':' } })),
      { name: 'sink', depends_on: leaves, kwargs: { cmd: ':' } },
    ],
  };
  const valid = validateWorkflow(raw);
  if (!valid.ok) throw new Error(JSON.stringify(valid.issues.slice(0, 3)));
  return valid.value;
}

/** Answers each task message with its success completion, 32 at a time, until stopped. */
async function answerTasks(tasks: MemoryTaskQueue, completions: MemoryTaskQueue, signal: AbortSignal): Promise<number> {
  let answered = 0;
  while (!signal.aborted) {
    let batch;
    try {
      batch = await tasks.receive({ maxMessages: 32, maxWaitTimeInMs: 200, abortSignal: signal });
    } catch (error) {
      if (signal.aborted) break;
      throw error;
    }
    for (const message of batch) {
      const envelope = decodeEnvelope(message.body);
      if (!envelope.ok) throw new Error(envelope.error);
      const info = decodeWorkflowTask(envelope.value.kwargs);
      if (!info.ok || info.value === null) throw new Error('not a workflow task');
      const { workflowId, taskName, attemptNo } = info.value;
      await completions.send({ body: encodeCompletion({ workflowId, taskName, attemptNo, success: true, outputRef: null, error: null }) });
      await tasks.complete(message);
      answered++;
    }
  }
  return answered;
}

export async function millionTaskRun(): Promise<void> {
  progress(`million: building and validating a ${TASKS}-task definition`);
  let t0 = performance.now();
  const def = definition();
  const store = new MemoryWorkflowStore();
  const outputs = new MemoryOutputStore();
  const completions = new MemoryTaskQueue({ name: 'million-workflow-completions', lockDurationInMs: 60_000 });
  const tasks = new MemoryTaskQueue({ name: 'million-default', lockDurationInMs: 600_000 });
  const client = new WorkflowClient({ store, completions, outputsContainer: outputs.outputsContainer });
  const { workflowId } = await client.submit({ definition: def }, { maxFanIn: 1000, id: 'million' });
  const submitS = (performance.now() - t0) / 1000;
  progress(`million: submitted in ${submitS.toFixed(1)} s; running`);

  // The peak is the run's: what building and validating the definition left behind is collected first.
  (globalThis as { gc?: () => void }).gc?.();
  let peakRss = process.memoryUsage().rss;
  const rssTimer = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }, 200);
  const coordinator = new Coordinator({
    store,
    completions,
    outputs,
    queues: () => tasks,
    options: { receiveWaitInMs: 50, batchFillWaitInMs: 0, statsIntervalInMs: 60_000, cancelPollIntervalInMs: 60_000, log: () => undefined },
  });
  const stopWorker = new AbortController();
  t0 = performance.now();
  let lastLog = t0;
  await coordinator.start();
  const worker = answerTasks(tasks, completions, stopWorker.signal);
  try {
    for (;;) {
      const summary = await store.getWorkflow(workflowId);
      if (summary && ['completed', 'failed', 'cancelled', 'corrupt'].includes(summary.status)) break;
      if (performance.now() - lastLog > 10_000) {
        lastLog = performance.now();
        const applied = coordinator.counters.completionsApplied;
        progress(
          `million: ${applied} completions applied, ${(applied / ((lastLog - t0) / 1000)).toFixed(0)}/s, RSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`,
        );
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    const runS = (performance.now() - t0) / 1000;
    stopWorker.abort();
    await worker;
    await coordinator.stop();
    clearInterval(rssTimer);
    const loaded = await store.load(workflowId);
    let completedOnce = 0;
    let wrong = 0;
    for (const [name, state] of tasksIn(loaded!.runtime)) {
      // Merge nodes complete inside the coordinator without an attempt; every other task at attempt 1.
      const ok = state.status === 'completed' && (name.startsWith('__merge_') || state.attemptNo === 1);
      if (ok) completedOnce++;
      else wrong++;
    }
    const applied = coordinator.counters.completionsApplied;
    process.stdout.write(
      `\n1M-task run (${TASKS} tasks + ${loaded!.runtime.definition.tasks.length - TASKS} merge nodes, in-memory adapters): status ${loaded!.runtime.status}; ` +
        `${applied} completions applied in ${runS.toFixed(1)} s (submit ${submitS.toFixed(1)} s); every task completed once: ${wrong === 0 ? 'yes' : `NO (${wrong} not)`} (${completedOnce} checked)\n`,
    );
    process.stdout.write(
      `1M-task coordinator run: ${(applied / runS).toFixed(0)} completions/s, peak RSS ${(peakRss / 2 ** 20).toFixed(0)} MiB\n`,
    );
  }
}
