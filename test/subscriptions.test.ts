import { describe, expect, it } from 'vitest';
import type { Message } from '../src/queue/message.js';
import type { DequeueInput } from '../src/queue/messages.js';
import { SubscriptionHub, type Subscriber } from '../src/queue/subscriptions.js';
import { TopicSignals } from '../src/queue/topic-signals.js';

/** A fake subscriber with `room` slots; what it is dealt counts against them until settled. */
class FakeSubscriber implements Subscriber {
  readonly received: Message[] = [];
  failed?: unknown;
  constructor(private room = 10) {}
  free = () => (this.failed ? 0 : this.room);
  deliver(messages: Message[]) {
    expect(messages.length).toBeLessThanOrEqual(this.room);
    this.room -= messages.length;
    this.received.push(...messages);
  }
  nextDeadline = () => undefined;
  releaseOverdue() {}
  fail(err: unknown) {
    this.failed = err;
  }
  settle(count: number) {
    this.room += count;
  }
}

/** A topic held in memory: each dequeue call is one claim. */
function fakeQueue() {
  const pending: Message[] = [];
  const claims: DequeueInput[] = [];
  let error: Error | undefined;
  let n = 0;
  return {
    pending,
    claims,
    failWith: (err: Error) => (error = err),
    add: (count: number) => {
      for (let i = 0; i < count; i++) pending.push({ id: `m${++n}` } as Message);
    },
    dequeue: async (input: DequeueInput) => {
      claims.push(input);
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (error) throw error;
      return pending.splice(0, input.count ?? 1);
    },
  };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

describe('SubscriptionHub', () => {
  it('serves four subscribers of a topic with one claim per wake-up, dealt round-robin', async () => {
    const queue = fakeQueue();
    const signals = new TopicSignals();
    const hub = new SubscriptionHub({ dequeue: queue.dequeue, signals });
    const subscribers = [0, 1, 2, 3].map(() => new FakeSubscriber());
    const joined = subscribers.map((s) => hub.join({ topic: 't' }, s));
    await settle();
    const before = queue.claims.length;

    queue.add(8);
    signals.signal('t');
    await settle();
    expect(queue.claims.length - before).toBe(1);
    expect(queue.claims.at(-1)).toMatchObject({ topic: 't', count: 40 });
    expect(subscribers.map((s) => s.received.length)).toEqual([2, 2, 2, 2]);
    for (const j of joined) j.leave();
  });

  it('claims again on a freed slot only when the last claim filled every slot', async () => {
    const queue = fakeQueue();
    const hub = new SubscriptionHub({ dequeue: queue.dequeue, signals: new TopicSignals() });
    const a = new FakeSubscriber(2);
    queue.add(3);
    const sub = hub.join({ topic: 't' }, a);
    await settle();
    expect(a.received).toHaveLength(2);
    const before = queue.claims.length;
    a.settle(2);
    sub.slotFreed();
    await settle();
    // The full claim may have left more: one claim for both free slots, which finds the third message.
    expect(queue.claims.length - before).toBe(1);
    expect(queue.claims.at(-1)?.count).toBe(2);
    expect(a.received).toHaveLength(3);
    a.settle(1);
    sub.slotFreed();
    await settle();
    // That claim returned less than asked: an ack alone does not cost another claim.
    expect(queue.claims.length - before).toBe(1);
    sub.leave();
  });

  it('keeps separate feeds per consumer group and visibility timeout', async () => {
    const queue = fakeQueue();
    const hub = new SubscriptionHub({ dequeue: queue.dequeue, signals: new TopicSignals() });
    const subs = [hub.join({ topic: 't', group: 'g' }, new FakeSubscriber()), hub.join({ topic: 't', visibilitySeconds: 5 }, new FakeSubscriber())];
    await settle();
    expect(queue.claims.map((c) => [c.consumerGroup, c.visibilityTimeoutSeconds])).toEqual([
      ['g', undefined],
      [undefined, 5],
    ]);
    for (const s of subs) s.leave();
  });

  it('gives what was claimed for a subscriber that left meanwhile to the others', async () => {
    const queue = fakeQueue();
    const signals = new TopicSignals();
    const hub = new SubscriptionHub({ dequeue: queue.dequeue, signals });
    const a = new FakeSubscriber(3);
    const b = new FakeSubscriber(3);
    const subA = hub.join({ topic: 't' }, a);
    const subB = hub.join({ topic: 't' }, b);
    await settle();
    queue.add(4);
    signals.signal('t');
    subA.leave();
    await settle();
    expect(a.received).toHaveLength(0);
    expect(b.received).toHaveLength(3);
    subB.leave();
  });

  it('fails every subscriber of the feed when the claim fails, and stops listening once all left', async () => {
    const queue = fakeQueue();
    const signals = new TopicSignals();
    const hub = new SubscriptionHub({ dequeue: queue.dequeue, signals });
    queue.failWith(new Error('database down'));
    const subscribers = [new FakeSubscriber(), new FakeSubscriber()];
    const joined = subscribers.map((s) => hub.join({ topic: 't' }, s));
    await settle();
    expect(subscribers.map((s) => (s.failed as Error)?.message)).toEqual(['database down', 'database down']);
    for (const j of joined) j.leave();
    const before = queue.claims.length;
    signals.signal('t');
    await settle();
    expect(queue.claims.length).toBe(before);
  });
});
