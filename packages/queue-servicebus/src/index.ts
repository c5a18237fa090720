/**
 * `@jobq/queue-servicebus`: the jobq `TaskQueue` on Azure Service Bus queues. See README.md.
 * @packageDocumentation
 */
export {
  DEAD_LETTER_DESCRIPTION_MAX_BYTES,
  DEAD_LETTER_REASON_MAX_CHARS,
  SERVICE_BUS_MAX_PEEK,
  SERVICE_BUS_MAX_TRANSFER_BYTES,
  SERVICE_BUS_PROPERTY_RESERVE_BYTES,
  ServiceBusTaskQueue,
  type ServiceBusQueueDescription,
  type ServiceBusQueueProperties,
  type ServiceBusTaskQueueSettings,
  bodyText,
  deadLetterProperties,
  deadLetterReasonText,
  toServiceBusMessage,
} from './servicebus-queue';
export { CREATED_QUEUE_SETTINGS, isoDuration, openServiceBusQueue, parseIsoDuration, type OpenServiceBusQueueOptions } from './open';
export { describeConnection, namespaceHost, openClientCount, type AdminPolicy, type ServiceBusConnection } from './connection';
export { SERVICE_BUS_MAX_MESSAGE_ID_LENGTH, serviceBusMessageId } from './message-id';
export { translateError, type ErrorContext } from './errors';
