import { describeQueueScenarios } from './test-helpers/queue-scenarios';
import { useHarness } from './test-helpers/stack';

// The queue-dependent end-to-end scenarios with the completion and task queues on Service Bus (the
// in-process broker of @jobq/servicebus-emulator, 2 s locks); the stores and outputs stay on Azurite.
describeQueueScenarios(useHarness(), 'servicebus');
