/**
 * A CPU profile of this process over one piece of work (`node:inspector`), summed by where the time
 * goes: each sample is charged to the nearest jobq package frame on its stack (so the Azure SDK's
 * work under a jobq call counts to that package), or to garbage collection, or to "no jobq frame"
 * (the event loop, HTTP parsing between calls, timers).
 */
import { Session } from 'node:inspector';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Milliseconds of CPU by bucket, largest first, and the total (idle left out). */
export interface ProfileSummary {
  totalMs: number;
  buckets: Array<{ name: string; ms: number }>;
}

function post<T>(session: Session, method: string, params?: object): Promise<T> {
  return new Promise((resolve, reject) =>
    session.post(method, params ?? {}, (error, result) => (error ? reject(error) : resolve(result as T))),
  );
}

/** Runs `work` under the profiler and sums its samples (see the module comment). */
export async function profiled<T>(work: () => Promise<T>): Promise<{ result: T; summary: ProfileSummary }> {
  const session = new Session();
  session.connect();
  try {
    await post(session, 'Profiler.enable');
    await post(session, 'Profiler.start');
    let stopped: Promise<{ profile: Profile }> | null = null;
    try {
      const result = await work();
      stopped = post<{ profile: Profile }>(session, 'Profiler.stop');
      return { result, summary: summarize((await stopped).profile) };
    } finally {
      if (stopped === null) await post(session, 'Profiler.stop').catch(() => undefined);
    }
  } finally {
    session.disconnect();
  }
}

/** Sums a profile's samples by bucket. */
export function summarize(profile: Profile): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const bucketOf = new Map<number, string>();
  const bucket = (id: number): string => {
    const known = bucketOf.get(id);
    if (known !== undefined) return known;
    const frame = byId.get(id)!.callFrame;
    let name: string;
    if (frame.functionName === '(garbage collector)') name = 'garbage collection';
    else if (frame.functionName === '(idle)') name = 'idle';
    else {
      const m = /packages\/([a-z-]+)\/dist\//.exec(frame.url) ?? /bench\/(dist)\//.exec(frame.url);
      if (m)
        name =
          m[1] === 'dist'
            ? 'bench harness (ceiling loops, observer)'
            : m[1] === 'azure-pipeline'
              ? 'Azure SDK request pipeline (below @jobq/azure-pipeline)'
              : `@jobq/${m[1]}`;
      else {
        const up = parent.get(id);
        name = up === undefined ? 'no jobq frame (event loop, HTTP between calls, timers)' : bucket(up);
      }
    }
    bucketOf.set(id, name);
    return name;
  };
  const sums = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const name = bucket(id);
    if (name === 'idle') return;
    const ms = (profile.timeDeltas[i] ?? 0) / 1000;
    total += ms;
    sums.set(name, (sums.get(name) ?? 0) + ms);
  });
  return { totalMs: total, buckets: [...sums].map(([name, ms]) => ({ name, ms })).sort((a, b) => b.ms - a.ms) };
}
