/**
 * `@jobq/servicebus-emulator`: an AMQP 1.0 broker on `rhea` with Azure Service Bus queue semantics,
 * reachable by the real `@azure/service-bus` SDK through a `UseDevelopmentEmulator=true` connection
 * string, started in this process or as a child process. See README.md.
 *
 * @packageDocumentation
 */
export { QueueRegistryError } from './types';
export type { QueueErrorCode, QueueInfo, QueueProperties, QueueRegistry, QueueRuntimeCounts } from './types';
export { createSasToken, verifySasToken } from './sas';
export type { SasVerdict } from './sas';
export { startServiceBus } from './emulator';
export type { ServiceBusEmulator, ServiceBusOptions, ServiceBusStats } from './emulator';
export type { FaultOperation } from './broker';
export type { QueueStats } from './queue';
export { PROFILE_DEFAULTS, PROFILE_LIMITS } from './profile';
export type { ServiceBusLimits, ServiceBusProfile } from './profile';
export { startAdminServer } from './admin';
export type { AdminServer, AdminServerOptions } from './admin';
export { ADMIN_POLICY_NAME, adminPolicy } from './admin-policy';
export type { AdminPipelinePolicy, AdminPolicyRequest } from './admin-policy';
export { startServiceBusProcess } from './process';
export { closeRawClient, connectRawClient } from './raw-client';
export type { RawClientKey } from './raw-client';
export { emptyQueueStats } from './queue';
export type { ServiceBusProcess, StartServiceBusProcessOptions } from './process';
