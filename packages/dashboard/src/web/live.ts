/**
 * Live updates of a workflow page: Server-Sent Events from `/api/events`, and after two failed
 * reconnects a poll every 5 s instead (see the package README). The event source and the timers
 * are handed in, so the switch is tested without a browser or real time.
 */
import type { ApiDeltaEvent, ApiStreamError } from '../api-types';

export const POLL_INTERVAL_MS = 5_000;
/** Failed reconnects after which the page polls instead. */
export const MAX_FAILED_RECONNECTS = 2;

/** What the page shows about its updates. */
export type LiveMode = 'connecting' | 'live' | 'reconnecting' | 'polling' | 'closed';

/** The part of `EventSource` used here. */
export interface EventSourceLike {
  addEventListener(type: string, listener: (event: Event) => void): void;
  close(): void;
}

export interface LiveDeps {
  open(url: string): EventSourceLike;
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

export interface LiveHandlers {
  /** A snapshot (first event, `snapshot` true) or a delta. */
  onEvent: (event: ApiDeltaEvent, snapshot: boolean) => void;
  /** The server could not read storage; it keeps trying. */
  onStreamError: (error: ApiStreamError) => void;
  onMode: (mode: LiveMode) => void;
  /** In polling mode, every interval: fetch the page's data again. */
  poll: () => void;
}

function parse<T>(event: Event): T | null {
  const data = (event as MessageEvent<unknown>).data;
  if (typeof data !== 'string') return null;
  try {
    return JSON.parse(data) as T;
  } catch {
    return null;
  }
}

/** Follows a stream; `close()` stops it (and the polling). */
export class LiveFeed {
  private source: EventSourceLike | null = null;
  private timer: unknown = null;
  /** Errors since the stream was last open: the first is the drop, each further one a failed reconnect. */
  private errors = 0;
  private mode: LiveMode = 'connecting';

  constructor(
    private readonly url: string,
    private readonly handlers: LiveHandlers,
    private readonly deps: LiveDeps,
  ) {
    this.connect();
  }

  get currentMode(): LiveMode {
    return this.mode;
  }

  private setMode(mode: LiveMode): void {
    if (mode === this.mode) return;
    this.mode = mode;
    this.handlers.onMode(mode);
  }

  private connect(): void {
    const source = this.deps.open(this.url);
    this.source = source;
    source.addEventListener('open', () => {
      this.errors = 0;
      this.setMode('live');
    });
    source.addEventListener('snapshot', (e) => {
      const body = parse<ApiDeltaEvent>(e);
      if (body) this.handlers.onEvent(body, true);
    });
    source.addEventListener('delta', (e) => {
      const body = parse<ApiDeltaEvent>(e);
      if (body) this.handlers.onEvent(body, false);
    });
    source.addEventListener('error', (e) => {
      // The server's own `event: error` carries data; the connection's error event does not.
      const body = parse<ApiStreamError>(e);
      if (body) {
        this.handlers.onStreamError(body);
        return;
      }
      this.errors++;
      if (this.errors > MAX_FAILED_RECONNECTS) this.startPolling();
      else this.setMode('reconnecting');
    });
  }

  private startPolling(): void {
    this.source?.close();
    this.source = null;
    if (this.timer !== null) return;
    this.setMode('polling');
    this.timer = this.deps.setInterval(() => this.handlers.poll(), POLL_INTERVAL_MS);
  }

  close(): void {
    this.source?.close();
    this.source = null;
    if (this.timer !== null) this.deps.clearInterval(this.timer);
    this.timer = null;
    this.setMode('closed');
  }
}

/** The browser's own event source and timers. */
export const browserLiveDeps: LiveDeps = {
  open: (url) => new EventSource(url),
  setInterval: (fn, ms) => window.setInterval(fn, ms),
  clearInterval: (handle) => window.clearInterval(handle as number),
};
