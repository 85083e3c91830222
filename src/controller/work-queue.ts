/**
 * A keyed work queue with client-go's workqueue semantics: a key is queued at most once, is never handed to
 * two workers at once (a key added while it is being processed is queued again when `done`), failures back
 * off per key exponentially, and an overall token bucket limits how fast keys are handed out.
 */
export interface WorkQueueOptions {
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Overall rate: keys per second and burst (client-go's controller default: 10 qps, burst 100). */
  qps?: number;
  burst?: number;
  now?: () => number;
}

export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly delayed = new Map<string, NodeJS.Timeout>();
  private waiters: Array<(key: string | undefined) => void> = [];
  private tokens: number;
  private refilledAt: number;
  private shuttingDown = false;
  private readonly options: Required<WorkQueueOptions>;

  constructor(options: WorkQueueOptions = {}) {
    this.options = { baseDelayMs: 500, maxDelayMs: 300_000, qps: 10, burst: 100, now: Date.now, ...options };
    this.tokens = this.options.burst;
    this.refilledAt = this.options.now();
  }

  get length(): number {
    return this.queue.length + this.delayed.size;
  }

  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return;
    this.push(key);
  }

  /** Adds the key again after its own exponential backoff (500 ms, 1 s, 2 s, ... up to 5 min). */
  addRateLimited(key: string): void {
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    this.addAfter(key, Math.min(this.options.baseDelayMs * 2 ** failures, this.options.maxDelayMs));
  }

  addAfter(key: string, delayMs: number): void {
    if (this.shuttingDown || this.delayed.has(key)) return;
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, delayMs);
    timer.unref();
    this.delayed.set(key, timer);
  }

  /** The key succeeded: its backoff starts again from the base delay. */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** Waits for the next key (undefined once shut down), honouring the overall rate limit. */
  async get(): Promise<string | undefined> {
    if (this.shuttingDown) return undefined;
    const key = this.queue.shift() ?? (await new Promise<string | undefined>((resolve) => this.waiters.push(resolve)));
    if (key === undefined) return undefined;
    this.processing.add(key);
    this.dirty.delete(key);
    await this.takeToken();
    return key;
  }

  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.has(key)) this.push(key);
  }

  shutDown(): void {
    this.shuttingDown = true;
    for (const timer of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    for (const waiter of this.waiters.splice(0)) waiter(undefined);
  }

  private push(key: string): void {
    const waiter = this.waiters.shift();
    if (waiter) waiter(key);
    else this.queue.push(key);
  }

  private async takeToken(): Promise<void> {
    const { qps, burst, now } = this.options;
    const elapsed = (now() - this.refilledAt) / 1000;
    this.tokens = Math.min(burst, this.tokens + elapsed * qps);
    this.refilledAt = now();
    this.tokens -= 1;
    if (this.tokens < 0) await new Promise((resolve) => setTimeout(resolve, (-this.tokens / qps) * 1000).unref());
  }
}
