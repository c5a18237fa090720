/** Options of {@link mapLimit}. */
export interface MapLimitOptions {
  /** Once aborted, no further call starts; the calls in flight are waited for, then the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Calls `fn` on every item, at most `limit` calls at once (in input order as slots free up), and resolves to the
 * results in input order. The first call to reject (or throw) stops further calls from starting; the promise
 * rejects with that error once the calls in flight have settled, so nothing runs on after it. An aborted `signal`
 * does the same with its reason (unless every item had already started). A `limit` below 1 (or not a number) is 1.
 */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => R | Promise<R>,
  options: MapLimitOptions = {},
): Promise<R[]> {
  const { signal } = options;
  const results = new Array<R>(items.length);
  let next = 0;
  let failure: { error: unknown } | null = null;
  const worker = async (): Promise<void> => {
    while (next < items.length && failure === null && signal?.aborted !== true) {
      const index = next++;
      try {
        results[index] = await fn(items[index]!, index);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  const width = Math.min(limit >= 1 ? Math.floor(limit) : 1, items.length);
  await Promise.all(Array.from({ length: width }, worker));
  if (failure !== null) throw (failure as { error: unknown }).error;
  if (next < items.length && signal?.aborted === true) throw signal.reason;
  return results;
}
