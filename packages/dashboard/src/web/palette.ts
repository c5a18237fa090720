/**
 * The colours and icons of task states. Colours are the Okabe–Ito set, which stays apart under
 * the common colour-vision deficiencies; every state also has its own icon, so colour is never
 * the only cue. `running` is split in two: `in_queue` (dispatched, no worker has it yet) and
 * `on_worker` (a worker's heartbeat lists it); plain `running` when no heartbeats are available.
 */

/** A task state as the page shows it. */
export type DisplayState =
  'pending' | 'ready' | 'in_queue' | 'on_worker' | 'running' | 'completed' | 'failed' | 'upstream_failed' | 'skipped' | 'cancelled';

/** Every display state, in lifecycle order (the order of status bars and legends). */
export const DISPLAY_STATES: readonly DisplayState[] = [
  'pending',
  'ready',
  'in_queue',
  'on_worker',
  'running',
  'completed',
  'failed',
  'upstream_failed',
  'skipped',
  'cancelled',
];

export interface StateStyle {
  /** Fill of the node and of its share of a status bar. */
  fill: string;
  /** Text colour that reads on `fill`. */
  ink: string;
  /** One character, drawn before the name. */
  icon: string;
  /** Words for the legend and for screen readers. */
  label: string;
}

export const STATE_STYLES: Readonly<Record<DisplayState, StateStyle>> = {
  pending: { fill: '#e4e4e4', ink: '#1a1a1a', icon: '○', label: 'pending' },
  ready: { fill: '#a8d8f0', ink: '#1a1a1a', icon: '◌', label: 'ready' },
  in_queue: { fill: '#f0e442', ink: '#1a1a1a', icon: '◷', label: 'running: in queue' },
  on_worker: { fill: '#0072b2', ink: '#ffffff', icon: '▶', label: 'running: on worker' },
  running: { fill: '#e69f00', ink: '#1a1a1a', icon: '▷', label: 'running' },
  completed: { fill: '#009e73', ink: '#ffffff', icon: '✓', label: 'completed' },
  failed: { fill: '#d55e00', ink: '#ffffff', icon: '✗', label: 'failed' },
  upstream_failed: { fill: '#cc79a7', ink: '#1a1a1a', icon: '⊘', label: 'upstream failed' },
  skipped: { fill: '#f5f5f5', ink: '#555555', icon: '↷', label: 'skipped' },
  cancelled: { fill: '#333333', ink: '#ffffff', icon: '■', label: 'cancelled' },
};

/** The style of any state name, unknown ones drawn as pending. */
export function styleOf(state: string): StateStyle {
  return (STATE_STYLES as Record<string, StateStyle | undefined>)[state] ?? STATE_STYLES.pending;
}
