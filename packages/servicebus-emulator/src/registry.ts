/**
 * The broker's queues, behind the {@link QueueRegistry} interface the admin endpoint uses. Names are
 * case-insensitive; the spelling of the create is kept.
 */
import { resolveProperties, queueNameProblem, type PropertyRules } from './profile';
import { Queue } from './queue';
import { QueueRegistryError, type QueueInfo, type QueueProperties, type QueueRegistry } from './types';

export interface RegistryOptions {
  defaults: QueueProperties;
  rules: PropertyRules;
  now: () => number;
}

export class BrokerRegistry implements QueueRegistry {
  private readonly queues = new Map<string, Queue>();
  /** Called after a queue was created (the broker wires its delivery pumps). */
  onCreate: (queue: Queue) => void = () => undefined;
  /** Called after a queue was deleted (the broker detaches its links). */
  onDelete: (queue: Queue) => void = () => undefined;

  constructor(private readonly options: RegistryOptions) {}

  /** Checks `patch` over the current defaults (throws a `bad-request` QueueRegistryError). */
  resolveDefaults(patch: Partial<QueueProperties>): QueueProperties {
    return resolveProperties(this.options.defaults, patch, this.options.rules);
  }

  setDefaults(defaults: QueueProperties): void {
    this.options.defaults = defaults;
  }

  get size(): number {
    return this.queues.size;
  }

  /** The queue itself (for the broker), by case-insensitive name. */
  queue(name: string): Queue | undefined {
    return this.queues.get(name.toLowerCase());
  }

  allQueues(): Queue[] {
    return [...this.queues.values()];
  }

  createQueue(name: string, properties: Partial<QueueProperties>): Queue {
    const problem = queueNameProblem(name);
    if (problem !== undefined) throw new QueueRegistryError('bad-request', problem);
    if (this.queues.has(name.toLowerCase())) throw new QueueRegistryError('conflict', `the queue "${name}" already exists`);
    const max = this.options.rules.limits.maxEntities;
    if (this.queues.size >= max) {
      throw new QueueRegistryError('limit', `the namespace holds its limit of ${max} entities; delete a queue first`);
    }
    const resolved = resolveProperties(this.options.defaults, properties, this.options.rules);
    let sequence = 0;
    const queue = new Queue(name, resolved, this.options.now, () => ++sequence);
    this.queues.set(name.toLowerCase(), queue);
    this.onCreate(queue);
    return queue;
  }

  create(name: string, properties: Partial<QueueProperties>): QueueInfo {
    return this.createQueue(name, properties).info();
  }

  get(name: string): QueueInfo | undefined {
    const q = this.queue(name);
    if (!q) return undefined;
    q.sweep();
    return q.info();
  }

  update(name: string, properties: Partial<QueueProperties>): QueueInfo {
    const q = this.queue(name);
    if (!q) throw new QueueRegistryError('not-found', `the queue "${name}" does not exist`);
    const dedup = properties.requiresDuplicateDetection;
    if (dedup !== undefined && dedup !== q.properties.requiresDuplicateDetection) {
      // As in Azure: fixed when the queue is created.
      throw new QueueRegistryError(
        'bad-request',
        `RequiresDuplicateDetection of the queue "${q.name}" cannot be changed after it was created`,
      );
    }
    q.properties = resolveProperties(q.properties, properties, this.options.rules);
    q.updatedAt = new Date(this.options.now());
    return q.info();
  }

  delete(name: string): boolean {
    const q = this.queue(name);
    if (!q) return false;
    this.queues.delete(name.toLowerCase());
    q.clear();
    this.onDelete(q);
    return true;
  }

  list(): QueueInfo[] {
    return this.allQueues().map((q) => {
      q.sweep();
      return q.info();
    });
  }
}
