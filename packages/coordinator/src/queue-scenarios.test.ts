import { describeQueueScenarios } from './test-helpers/queue-scenarios';
import { useHarness } from './test-helpers/stack';

// The queue-dependent end-to-end scenarios on Storage Queues (Azurite); on Service Bus:
// queue-scenarios.servicebus.test.ts.
describeQueueScenarios(useHarness(), 'storage');
