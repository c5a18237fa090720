import { decodeCoordinatorMessage, type Completion } from '@jobq/dag-core/wire';
import {
  JobqError,
  type OutgoingMessage,
  type OutputStore,
  type PutOutputOptions,
  type PutOutputResult,
  type TaskLogMetadata,
} from '@jobq/ports';
import { MemoryTaskQueue } from '@jobq/memory';
import { WorkflowProcessor, type WorkflowProcessorOptions } from '../workflow-processor';

/** The inline limit of the real output store. */
const INLINE_LIMIT_BYTES = 32 * 1024;

/**
 * An output store in memory for fast processor tests: `putOutput` refuses text that is not JSON
 * (as the Azure one does), keeps ≤ 32 KiB (or what `fitsInline` accepts) inline and "uploads" the
 * rest to a map under the attempt's path; the next
 * `putOutput` fails with `failNext` when set, and reading an overflow blob fails with
 * `overflowError`. Files are not supported. Task logs are kept in `logs` by
 * `{wf}/{task}/{attempt}` (each write in `logWrites`); `failLogs` makes log writes fail.
 */
export function memoryOutputs(): OutputStore & {
  blobs: Map<string, string>;
  putCalls: number;
  failNext: Error | null;
  overflowError: Error | null;
  logs: Map<string, { text: string; metadata: TaskLogMetadata }>;
  logWrites: Array<{ key: string; text: string; metadata: TaskLogMetadata }>;
  failLogs: Error | null;
} {
  const blobs = new Map<string, string>();
  const logs = new Map<string, { text: string; metadata: TaskLogMetadata }>();
  const logWrites: Array<{ key: string; text: string; metadata: TaskLogMetadata }> = [];
  const store = {
    logs,
    logWrites,
    failLogs: null as Error | null,
    putTaskLog(workflowId: string, taskName: string, attemptNo: number, text: Uint8Array, metadata: TaskLogMetadata): Promise<void> {
      const key = `${workflowId}/${taskName}/${attemptNo}`;
      const write = { key, text: Buffer.from(text).toString('utf8'), metadata };
      logWrites.push(write);
      if (store.failLogs) return Promise.reject(store.failLogs);
      logs.set(key, { text: write.text, metadata });
      return Promise.resolve();
    },
    getTaskLog(): Promise<never> {
      return Promise.reject(new JobqError('internal', 'memoryOutputs: getTaskLog is not supported'));
    },
    listTaskLogs(): Promise<never> {
      return Promise.reject(new JobqError('internal', 'memoryOutputs: listTaskLogs is not supported'));
    },
    outputsContainer: 'mem-outputs',
    blobs,
    putCalls: 0,
    failNext: null as Error | null,
    /** What `getUpstreamOverflow` rejects with (it never finds a blob). */
    overflowError: null as Error | null,
    putOutput(workflowId: string, taskName: string, attemptNo: number, json: string, options?: PutOutputOptions): Promise<PutOutputResult> {
      store.putCalls++;
      const failure = store.failNext;
      store.failNext = null;
      if (failure) return Promise.reject(failure);
      if (json.trim() === '') return Promise.resolve({ ref: null, placement: 'none', bytes: 0 });
      try {
        JSON.parse(json);
      } catch (error) {
        return Promise.reject(
          new JobqError('invalid-argument', `the output of task "${taskName}" is not valid JSON: ${(error as Error).message}`),
        );
      }
      const bytes = Buffer.byteLength(json, 'utf8');
      const inline = options?.fitsInline ? options.fitsInline(json) : bytes <= INLINE_LIMIT_BYTES;
      if (inline) return Promise.resolve({ ref: json, placement: 'inline', bytes });
      const path = `outputs/${workflowId}/${taskName}/${attemptNo}.json`;
      blobs.set(path, json);
      return Promise.resolve({ ref: `blob:mem-outputs/${path}`, placement: 'blob', bytes });
    },
    getOutput(): Promise<unknown> {
      return Promise.reject(new JobqError('internal', 'memoryOutputs: getOutput is not supported'));
    },
    putFile(): never {
      throw new JobqError('internal', 'memoryOutputs: files are not supported');
    },
    putFileFromPath(): never {
      throw new JobqError('internal', 'memoryOutputs: files are not supported');
    },
    getFile(): never {
      throw new JobqError('internal', 'memoryOutputs: files are not supported');
    },
    downloadFileTo(): never {
      throw new JobqError('internal', 'memoryOutputs: files are not supported');
    },
    putUpstreamOverflow(): never {
      throw new JobqError('internal', 'memoryOutputs: overflow blobs are not supported');
    },
    getUpstreamOverflow(): Promise<never> {
      return Promise.reject(store.overflowError ?? new JobqError('not-found', 'memoryOutputs: no overflow blobs'));
    },
    deleteWorkflowOutputs(workflowId: string): Promise<number> {
      const doomed = [...blobs.keys()].filter((path) => path.startsWith(`outputs/${workflowId}/`));
      for (const path of doomed) blobs.delete(path);
      return Promise.resolve(doomed.length);
    },
  };
  return store;
}

/** A completion queue that records what was sent (decoded); `failures` are thrown by the next sends. */
export class RecordingCompletions extends MemoryTaskQueue {
  readonly sent: Completion[] = [];
  /** Errors the next `send` calls reject with, in order (then sends pass). */
  failures: Error[] = [];
  sendCalls = 0;

  constructor() {
    super({ name: 'completions' });
  }

  override async send(messages: OutgoingMessage | readonly OutgoingMessage[]): Promise<void> {
    this.sendCalls++;
    const failure = this.failures.shift();
    if (failure) throw failure;
    const list = Array.isArray(messages) ? (messages as readonly OutgoingMessage[]) : [messages as OutgoingMessage];
    await super.send(list);
    for (const message of list) {
      const decoded = decodeCoordinatorMessage(message.body);
      if (decoded.kind !== 'completion') throw new Error(`not a completion: ${message.body}`);
      this.sent.push(decoded.completion);
    }
  }

  /** The completions sent for one attempt. */
  forAttempt(workflowId: string, taskName: string, attemptNo: number): Completion[] {
    return this.sent.filter((c) => c.workflowId === workflowId && c.taskName === taskName && c.attemptNo === attemptNo);
  }
}

/**
 * A workflow processor on {@link memoryOutputs} and {@link RecordingCompletions}, never cancelled,
 * with short kill and send back-off times; `options` (an `env` and a `tempDir` at least) go on top.
 */
export function memoryWorkflowProcessor(options: Partial<WorkflowProcessorOptions>): {
  completions: RecordingCompletions;
  processor: WorkflowProcessor;
} {
  const completions = new RecordingCompletions();
  const processor = new WorkflowProcessor({
    outputs: memoryOutputs(),
    completions,
    isCancelled: () => Promise.resolve(false),
    killTimeoutInMs: 1_000,
    completionBackoff: { initialInMs: 1, maxInMs: 2 },
    ...options,
  });
  return { completions, processor };
}
