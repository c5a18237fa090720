/**
 * `startLocalStack`: everything a jobq deployment talks to, on loopback in this process — Azure
 * Storage from Azurite and, when asked, Service Bus from `@jobq/servicebus-emulator`.
 */
import { startServiceBus, type ServiceBusEmulator, type ServiceBusOptions } from '@jobq/servicebus-emulator';
import { startAzurite, type LocalStorage, type StartAzuriteOptions } from './azurite';

export interface StartLocalStackOptions {
  /** Options of the embedded Azurite. */
  storage?: StartAzuriteOptions;
  /** Start the Service Bus emulator too: `true` for its defaults, or its options. */
  serviceBus?: boolean | ServiceBusOptions;
}

export interface LocalStack {
  storage: LocalStorage;
  /** Null unless `serviceBus` was asked for. */
  serviceBus: ServiceBusEmulator | null;
  storageConnectionString: string;
  /** Null unless `serviceBus` was asked for. */
  serviceBusConnectionString: string | null;
  /** Stops both; idempotent. */
  stop(): Promise<void>;
}

export async function startLocalStack(options: StartLocalStackOptions = {}): Promise<LocalStack> {
  const storage = await startAzurite(options.storage);
  let serviceBus: ServiceBusEmulator | null = null;
  if (options.serviceBus !== undefined && options.serviceBus !== false) {
    try {
      serviceBus = await startServiceBus(options.serviceBus === true ? {} : options.serviceBus);
    } catch (error) {
      await storage.stop();
      throw error;
    }
  }
  let stopping: Promise<void> | undefined;
  return {
    storage,
    serviceBus,
    storageConnectionString: storage.connectionString,
    serviceBusConnectionString: serviceBus?.connectionString ?? null,
    stop() {
      stopping ??= Promise.all([storage.stop(), serviceBus?.stop()]).then(() => undefined);
      return stopping;
    },
  };
}
