import { useEffect, useState } from 'preact/hooks';
import { getJson } from './api';
import { errorText } from './format';

/**
 * A JSON route read now and again every `everyMs` while the page shows it (and again from the start
 * when `path` changes): the last answer, and the last error as one line until an answer clears it.
 */
export function usePolledJson<T>(path: string, everyMs: number): { data: T | null; error: string | null } {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let stopped = false;
    const read = (): void => {
      getJson<T>(path).then(
        (d) => {
          if (stopped) return;
          setData(d);
          setError(null);
        },
        (err: unknown) => {
          if (!stopped) setError(errorText(err));
        },
      );
    };
    read();
    const timer = setInterval(read, everyMs);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [path, everyMs]);
  return { data, error };
}
