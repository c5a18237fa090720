/**
 * The last `capacity` clients made by `make`, by name. An SDK blob client costs about 20–40 µs to
 * build (it parses its URL several times and sets up its operation objects) and holds no per-call
 * state, so the clients of the blobs a store writes again and again (a workflow's head and runtime
 * log) are kept and shared. Oldest first out.
 */
export class ClientCache<T> {
  private readonly clients = new Map<string, T>();

  constructor(
    private readonly make: (name: string) => T,
    private readonly capacity = 256,
  ) {}

  get(name: string): T {
    let client = this.clients.get(name);
    if (client === undefined) {
      client = this.make(name);
      if (this.clients.size >= this.capacity) this.clients.delete(this.clients.keys().next().value as string);
      this.clients.set(name, client);
    }
    return client;
  }

  get size(): number {
    return this.clients.size;
  }
}
