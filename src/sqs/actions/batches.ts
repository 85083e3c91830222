import { SqsError, sqsErrorOf } from '../errors.js';

/** A batch holds 1 to MAX_BATCH entries, as in SQS. */
export const MAX_BATCH = 10;
const BATCH_ID = /^[A-Za-z0-9_-]{1,80}$/;

export const NOT_AUDITED = 'produce and consume are the message traffic itself, not changes to audit';

/** Checks a batch's entries as SQS does: 1 to 10, ids well formed and distinct. */
export function checkBatch(entries: Array<{ Id: string }>): void {
  if (entries.length === 0) throw new SqsError('EmptyBatchRequest', 'There should be at least one entry in the request.');
  if (entries.length > MAX_BATCH) throw new SqsError('TooManyEntriesInBatchRequest', `Maximum number of entries per request are ${MAX_BATCH}. You have sent ${entries.length}.`);
  const ids = new Set<string>();
  for (const { Id } of entries) {
    if (!BATCH_ID.test(Id)) throw new SqsError('InvalidBatchEntryId', 'A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.');
    if (ids.has(Id)) throw new SqsError('BatchEntryIdsNotDistinct', `Id ${Id} repeated.`);
    ids.add(Id);
  }
}

/** Runs each entry on its own (the group commits batch them underneath) and sorts the outcomes into Successful and Failed. */
export async function eachEntry<E extends { Id: string }>(entries: E[], run: (entry: E) => Promise<Record<string, unknown>>) {
  const outcomes = await Promise.allSettled(entries.map(run));
  const Successful: unknown[] = [];
  const Failed: unknown[] = [];
  outcomes.forEach((outcome, i) => {
    if (outcome.status === 'fulfilled') Successful.push({ Id: entries[i].Id, ...outcome.value });
    else {
      const err = sqsErrorOf(outcome.reason);
      if (err.status >= 500) throw outcome.reason;
      Failed.push({ Id: entries[i].Id, SenderFault: true, Code: err.code, Message: err.message });
    }
  });
  return { Successful, Failed };
}

