import { Flags } from '@oclif/core';
import { JobqCommand } from '../../base';
import { COORDINATOR_SETTINGS, maskSecret, type Resolved } from '../../config';
import { configFlags, configFromFlags, coordinatorFlags } from '../../flags';
import { fittedTable } from '../../format';
import { queuesNamespace, serviceBusAccessLine } from '../../servicebus-access';
import { storageAccess, storageAccessLine } from '../../storage-access';

/** One shown setting: its value (secrets masked) and where it came from. */
interface ShownValue {
  value: string | number | null;
  source: Resolved<unknown>['source'];
  from: string | null;
}

function shown<T>(resolved: Resolved<T>, text: (value: T) => string | number | null): ShownValue {
  const raw = text(resolved.value);
  const value = resolved.secret && typeof raw === 'string' ? maskSecret(raw) : raw;
  return { value, source: resolved.source, from: resolved.from };
}

export default class ConfigShow extends JobqCommand {
  static override summary = 'Show the resolved configuration and where each value comes from';
  static override description =
    'Resolves every setting the way the other commands do — flag, then environment variable, then config file (--config, ' +
    '$JOBQ_WORKFLOW_CONFIG, else ./jobq.yaml), then default; an empty environment variable counts as unset — and prints each value ' +
    'with its source (flag, env, file or default). Connection strings are shown with their keys and signatures masked (and, in a terminal, wrapped to its width). ' +
    'Then, for each storage account the configuration uses, what really reaches it: the connection string (from which variable ' +
    'or file key; account key, SAS or endpoints only), the local emulator, or DefaultAzureCredential. ' +
    'With --queues sb://NAMESPACE, how that namespace is reached: the Service Bus connection string (when its Endpoint is that namespace, or for sb://local) or DefaultAzureCredential. ' +
    'Touches no storage. A config file with an unknown key, or an explicit --config that does not exist, is a usage error (exit 2).';
  static override examples = [
    '<%= config.bin %> config show',
    '<%= config.bin %> config show --prefix myaccount/MyProject --json',
    '<%= config.bin %> config show --config ./staging.yaml --batch-size 16',
  ];
  static override flags = {
    ...configFlags,
    ...coordinatorFlags,
    json: Flags.boolean({
      description:
        'Print one JSON document: {file, settings: {key: {value, source, from}}, storage_access: [{account, uses, from, credential, note}], servicebus_access: [line]}, settings named by their config file keys',
      default: false,
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(ConfigShow);
    const config = configFromFlags(flags);
    const settings: Record<string, ShownValue> = {
      prefix: shown(config.prefix, (p) => (p === null ? null : `${p.account}/${p.prefix}`)),
      queues: shown(config.queues, (v) => v),
      blobs: shown(config.blobs, (v) => v),
      connectionString: shown(config.connectionString, (v) => v),
      serviceBusConnectionString: shown(config.serviceBusConnectionString, (v) => v),
      serviceBusAdminEndpoint: shown(config.serviceBusAdminEndpoint, (v) => v),
    };
    for (const s of COORDINATOR_SETTINGS) settings[s.key] = shown(config.coordinator[s.key], (v) => v);

    const access = storageAccess(config);
    const namespace = queuesNamespace(config);
    const serviceBus = namespace === null ? [] : [serviceBusAccessLine(config, namespace)];
    if (flags.json) {
      // Named by the config file's keys (docs/azure.md#configuration), as every --json key is snake_case.
      const byFileKey: Record<string, ShownValue> = {
        prefix: settings.prefix!,
        queues: settings.queues!,
        blobs: settings.blobs!,
        connection_string: settings.connectionString!,
        servicebus_connection_string: settings.serviceBusConnectionString!,
        servicebus_admin_endpoint: settings.serviceBusAdminEndpoint!,
        ...Object.fromEntries(COORDINATOR_SETTINGS.map((s) => [s.file, settings[s.key]!])),
      };
      this.printJson({ file: config.file, settings: byFileKey, storage_access: access, servicebus_access: serviceBus });
      return;
    }
    const names: Record<string, string> = {
      prefix: 'prefix',
      queues: 'queues',
      blobs: 'blobs',
      connectionString: 'connection string',
      serviceBusConnectionString: 'servicebus connection string',
      serviceBusAdminEndpoint: 'servicebus admin endpoint',
      ...Object.fromEntries(COORDINATOR_SETTINGS.map((s) => [s.key, s.flag])),
    };
    const rows = Object.entries(settings).map(([key, v]) => [
      names[key] ?? key,
      v.value === null ? '(unset)' : String(v.value),
      v.from === null ? v.source : `${v.source} (${v.from})`,
    ]);
    const accessLines = access.length === 0 ? ['  (no storage account configured)'] : access.map((a) => `  ${storageAccessLine(a)}`);
    const serviceBusLines =
      serviceBus.length === 0 ? '' : `\nService Bus access:\n${serviceBus.map((line) => `  ${maskSecret(line)}`).join('\n')}\n`;
    process.stdout.write(
      `Config file: ${config.file ?? '(none)'}\n\n${fittedTable(['Setting', 'Value', 'Source'], rows, { wrap: 1, width: process.stdout.isTTY ? process.stdout.columns : null })}\n\nStorage access:\n${accessLines.join('\n')}\n${serviceBusLines}`,
    );
  }
}
