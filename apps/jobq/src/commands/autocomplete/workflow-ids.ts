import { Flags } from '@oclif/core';
import { JobqCommand } from '../../base';
import { storageConfigured, type CliConfig } from '../../config';
import { durationMs, legacyDurationFlag } from '../../duration-flags';
import { configFlags, configFromFlags } from '../../flags';

/** At most this many ids (one page of the index). */
const MAX_IDS = 200;

/** The workflow ids of the configured deployment, or none when no deployment is configured. */
async function workflowIds(config: CliConfig, signal: AbortSignal): Promise<string[]> {
  const prefix = config.prefix.value;
  if (prefix === null) return [];
  // Loaded here, not at the top: the storage SDKs take most of a second to load, which a shell
  // without a configured deployment should not wait for.
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS require keeps the load lazy (an import() would load it as ECMAScript)
  const { openWorkflowStore } = require('@jobq/store-azure') as typeof import('@jobq/store-azure');
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS require keeps the load lazy (an import() would load it as ECMAScript)
  const { connectionFor } = require('../../deployment') as typeof import('../../deployment');
  const store = await openWorkflowStore({
    connection: connectionFor(config, prefix.account),
    prefix: prefix.prefix,
    createIfMissing: false,
  });
  const page = await store.listWorkflows({ limit: MAX_IDS, abortSignal: signal });
  return page.items.map((w) => w.workflowId);
}

/**
 * The shell completion of workflow ids (docs/cli.md#shell-completion): prints the ids of the configured
 * deployment's index, one a line. Completion must stay quick and quiet: with no deployment configured
 * it reads nothing at all, and after --timeout, or on any error, it prints nothing and exits 0.
 */
export default class AutocompleteWorkflowIds extends JobqCommand {
  static override hidden = true;
  static override summary = 'Print the workflow ids of the configured deployment, for shell completion';
  static override flags = {
    ...configFlags,
    timeout: Flags.string({ description: 'Give up (printing nothing) after this long (a duration, at least 1ms)', default: '1500ms' }),
    'timeout-ms': legacyDurationFlag('timeout-ms', 'timeout', 'milliseconds'),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(AutocompleteWorkflowIds);
    let config: CliConfig;
    try {
      config = configFromFlags(flags);
    } catch {
      return;
    }
    if (!storageConfigured(config)) return;
    const signal = AbortSignal.timeout(durationMs(flags.timeout, '--timeout', 1));
    const timedOut = new Promise<string[]>((resolve) => signal.addEventListener('abort', () => resolve([]), { once: true }));
    const ids = await Promise.race([workflowIds(config, signal).catch(() => []), timedOut]);
    if (ids.length > 0) process.stdout.write(`${ids.join('\n')}\n`);
    // A credential lookup or a request that ignored the abort must not keep the shell waiting.
    if (signal.aborted) this.exit(0);
  }
}
