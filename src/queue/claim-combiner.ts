import { GroupCommitter } from './group-commit.js';

export interface ClaimCombinerOptions {
  /** Most rows one combined claim asks for; a single larger request still claims alone. */
  maxRows: number;
  /** Combined claims of one lane in flight at once. */
  maxConcurrent: number;
}

/**
 * The claim side of group commit: dequeues of one lane (a topic with the same consumer group and visibility
 * timeout) that arrive while a claim of that lane runs in this instance wait and then share one claim
 * transaction, whose rows are handed out oldest first in arrival order. Claims of one topic fight over the
 * same index pages and rows (SKIP LOCKED walks past what the others hold), so N concurrent consumers cost a
 * few claims instead of N. A lone dequeue claims on the next turn of the event loop, as before.
 *
 * Every request of a lane must mean the same claim: the lane key names all that shapes it except the count.
 */
export class ClaimCombiner<R> {
  private readonly lanes = new Map<string, GroupCommitter<number, R[]>>();

  constructor(private readonly options: ClaimCombinerOptions) {}

  async claim(lane: string, count: number, run: (total: number) => Promise<R[]>): Promise<R[]> {
    let committer = this.lanes.get(lane);
    if (!committer) {
      committer = new GroupCommitter<number, R[]>(async (counts) => shareOut(await run(counts.reduce((a, b) => a + b, 0)), counts), {
        maxBatch: this.options.maxRows,
        maxConcurrent: this.options.maxConcurrent,
        weigh: (n) => n,
      });
      this.lanes.set(lane, committer);
    }
    try {
      return await committer.submit(count);
    } finally {
      if (committer.idle && this.lanes.get(lane) === committer) this.lanes.delete(lane);
    }
  }
}

/** Rows in claim order (oldest first): the first request gets the first `counts[0]`, and so on. */
function shareOut<R>(rows: R[], counts: number[]): R[][] {
  let at = 0;
  return counts.map((n) => {
    const share = rows.slice(at, at + n);
    at += share.length;
    return share;
  });
}
