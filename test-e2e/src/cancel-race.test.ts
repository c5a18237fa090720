import { afterAll, expect, it } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runCli } from './cli';
import { ProcessGroup, SharedStorage, deployment, eventually, logsOf, stopProcess, tempDir, waitForEnd, workerArgs } from './stack';

const storage = new SharedStorage();
const procs = new ProcessGroup();
afterAll(async () => {
  await procs.killAll();
  await storage.stop();
});

// The worker reads cancel requests from the index itself and stops the task; its failure completion
// can reach the coordinator before the coordinator has applied the cancel (here: no wake-up, and
// the coordinator's index scan is 20 s away). The task must still end cancelled, not failed.
it('a cancel the worker sees before the coordinator does still ends the workflow cancelled', async () => {
  const d = await deployment(storage, 'cancelrace');
  const dir = await tempDir('cancelrace');
  const pidFile = join(dir.path, 'pid');
  const file = join(dir.path, 'wf.json');
  await writeFile(
    file,
    JSON.stringify({
      name: 'cancel-race',
      default_queue: d.queue,
      tasks: [{ name: 'long', kwargs: { cmd: `echo $$ > '${pidFile}'; sleep 60` } }],
    }),
  );
  const coordinator = procs.start(['workflow', 'coordinator', '--cancel-poll-interval', '20s', '--idle-sleep', '200ms'], { env: d.env() });
  const worker = procs.start(workerArgs(d.queue), { env: d.env({ JOBQ_CANCEL_POLL_INTERVAL: '1', JOBQ_KILL_TIMEOUT: '2' }) });
  try {
    const id = (await runCli(['workflow', 'submit', file], { env: d.env() })).stdout.trim();
    await eventually('the task to start', () =>
      Promise.resolve(existsSync(pidFile) && readFileSync(pidFile, 'utf8') !== '' ? true : undefined),
    );
    const store = await d.store();
    // What `jobq workflow cancel` writes first; its wake-up is delayed (not sent here).
    await store.requestCancel(id, new Date().toISOString());
    const end = await waitForEnd(store, id, 90_000, () => logsOf({ coordinator, worker }));
    expect(end.status).toBe('cancelled');
    expect(end.tasks.long?.status).toBe('cancelled');
  } finally {
    await stopProcess(coordinator);
    await stopProcess(worker);
    await dir.remove();
  }
});
