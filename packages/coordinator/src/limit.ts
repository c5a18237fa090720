/**
 * Runs at most `n` calls at once; the others wait their turn in the order they came (a slot freed
 * goes straight to the next waiter, so a later caller cannot overtake).
 */
export class Limit {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly n: number) {}

  async run<T>(call: () => Promise<T>): Promise<T> {
    if (this.running >= this.n) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await call();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
