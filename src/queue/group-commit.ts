export interface GroupCommitOptions<I> {
  /** Most items one flush takes, or most total weight when `weigh` is given (a heavier item still goes alone). */
  maxBatch: number;
  weigh?: (item: I) => number;
  /** Flushes in flight at once (1 for SQLite's single writer; a few for MySQL's pool). */
  maxConcurrent: number;
}

interface Pending<I, O> {
  item: I;
  resolve: (value: O) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit: requests that arrive while a flush is running wait and go together in the next one, so a
 * burst of N concurrent callers costs a few transactions, not N. There is no timer: under light load a
 * lone request flushes on the next turn of the event loop; under heavy load batches grow by themselves.
 * Each caller's promise settles only after the flush that carried its item committed.
 */
export class GroupCommitter<I, O> {
  private queue: Pending<I, O>[] = [];
  private running = 0;
  private scheduled = false;
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly flush: (items: I[]) => Promise<Array<O | Error>>,
    private readonly options: GroupCommitOptions<I>,
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** Nothing queued, nothing in flight. */
  get idle(): boolean {
    return this.queue.length === 0 && this.running === 0;
  }

  /** Resolves once nothing is queued or in flight (graceful shutdown). */
  drained(): Promise<void> {
    if (this.queue.length === 0 && this.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private schedule(): void {
    if (this.scheduled || this.running >= this.options.maxConcurrent || this.queue.length === 0) return;
    this.scheduled = true;
    // setImmediate lets every request parsed in this event-loop turn join the batch.
    setImmediate(() => {
      this.scheduled = false;
      void this.runOne();
    });
  }

  private batchLength(): number {
    const { weigh, maxBatch } = this.options;
    if (!weigh) return maxBatch;
    let total = weigh(this.queue[0].item);
    let n = 1;
    while (n < this.queue.length && total + weigh(this.queue[n].item) <= maxBatch) total += weigh(this.queue[n++].item);
    return n;
  }

  private async runOne(): Promise<void> {
    if (this.running >= this.options.maxConcurrent || this.queue.length === 0) return;
    const batch = this.queue.splice(0, this.batchLength());
    this.running++;
    this.schedule();
    try {
      const results = await this.flush(batch.map((p) => p.item));
      batch.forEach((p, i) => {
        const result = results[i];
        if (result instanceof Error) p.reject(result);
        else p.resolve(result);
      });
    } catch (err) {
      for (const p of batch) p.reject(err);
    } finally {
      this.running--;
      this.schedule();
      if (this.queue.length === 0 && this.running === 0) this.idleWaiters.splice(0).forEach((wake) => wake());
    }
  }
}
