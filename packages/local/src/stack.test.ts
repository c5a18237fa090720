import { describe, expect, it } from '@jest/globals';
import { ServiceBusClient } from '@azure/service-bus';
import { QueueClient } from '@azure/storage-queue';
import { startLocalStack } from './index';

describe('startLocalStack', () => {
  it('with serviceBus: both connection strings work with the real SDKs; stop() stops both', async () => {
    const stack = await startLocalStack({ serviceBus: true });
    try {
      const queue = new QueueClient(stack.storageConnectionString, 'stack-check');
      await queue.create();
      await queue.sendMessage('storage');
      expect((await queue.receiveMessages()).receivedMessageItems[0]?.messageText).toBe('storage');
      const client = new ServiceBusClient(stack.serviceBusConnectionString!);
      await client.createSender('stack-check').sendMessages({ body: 'service bus' });
      const [message] = await client
        .createReceiver('stack-check', { receiveMode: 'receiveAndDelete' })
        .receiveMessages(1, { maxWaitTimeInMs: 5_000 });
      expect(message?.body).toBe('service bus');
      await client.close();
    } finally {
      await stack.stop();
      await stack.stop();
    }
    await expect(
      new QueueClient(stack.storageConnectionString, 'stack-check', { retryOptions: { maxTries: 1 } }).getProperties(),
    ).rejects.toThrow();
    await expect(
      new ServiceBusClient(stack.serviceBusConnectionString!, { retryOptions: { maxRetries: 0, timeoutInMs: 2_000 } })
        .createSender('stack-check')
        .sendMessages({ body: 'x' }),
    ).rejects.toThrow();
  }, 30_000);

  it('without: Azurite only', async () => {
    const stack = await startLocalStack();
    try {
      expect(stack.serviceBus).toBeNull();
      expect(stack.serviceBusConnectionString).toBeNull();
      expect(stack.storageConnectionString).toContain('127.0.0.1');
    } finally {
      await stack.stop();
    }
  });
});
