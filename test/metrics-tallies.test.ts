import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { MetricsRegistry } from '../src/metrics/registry.js';
import { parseMetrics, valueOf } from './helpers/metrics.js';

// The per-message counters and durations are tallied in memory and exported at each scrape
// (src/metrics/tallies.ts); these check that Prometheus reads them as it read OpenTelemetry's own instruments.
describe('metrics tallied in memory', () => {
  let registry: MetricsRegistry;
  let server: Server | undefined;

  afterEach(async () => {
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    server = undefined;
    await registry.shutdown();
  });

  async function scrape(): Promise<string> {
    server ??= createServer((req, res) => registry.handle(req, res));
    if (!server.listening) await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`);
    return res.text();
  }

  it('a duration counts a value equal to a bucket boundary in that bucket (le), and one above all in +Inf only', async () => {
    registry = new MetricsRegistry();
    const durations = registry.durations('test_call_duration_seconds', 'Test durations');
    const series = durations.of('one', () => ({ method: 'One' }));
    for (const seconds of [0.0005, 0.0006, 20]) series.record(seconds);
    const text = await scrape();
    expect(text).toContain('# TYPE test_call_duration_seconds histogram');
    expect(text).toContain('# UNIT test_call_duration_seconds s');
    const samples = parseMetrics(text);
    const bucket = (le: string) => valueOf(samples, 'test_call_duration_seconds_bucket', { method: 'One', le });
    expect(bucket('0.0005')).toBe(1);
    expect(bucket('0.001')).toBe(2);
    expect(bucket('10')).toBe(2);
    expect(bucket('+Inf')).toBe(3);
    expect(valueOf(samples, 'test_call_duration_seconds_count', { method: 'One', otel_scope_name: 'conveyor' })).toBe(3);
    expect(valueOf(samples, 'test_call_duration_seconds_sum', { method: 'One' })).toBeCloseTo(20.0011, 6);
  });

  it('counters are cumulative counters per topic; one not used yet shows its placeholders at 0, until its first series', async () => {
    registry = new MetricsRegistry();
    registry.message('enqueued', 'orders', 3);
    registry.message('enqueued', 'orders');
    registry.message('acked', 'orders', 2);
    registry.claim('orders', 0);
    registry.nacked('orders', 'dlq');
    const text = await scrape();
    expect(text).toContain('# TYPE conveyor_messages_enqueued_total counter');
    const samples = parseMetrics(text);
    // Not used yet: one series at 0 without a topic (a panel reads 0, not "No data").
    expect(samples.filter((s) => s.name === 'conveyor_messages_expired_total').map((s) => [s.labels.topic, s.value])).toEqual([[undefined, 0]]);
    // Used: only its real series, no placeholder beside them.
    expect(samples.filter((s) => s.name === 'conveyor_messages_enqueued_total').map((s) => s.labels.topic)).toEqual(['orders']);
    // Placeholders per value of the label the alerts select on, replaced by the first real series.
    expect(samples.filter((s) => s.name === 'conveyor_enqueue_rejected_total').map((s) => `${s.labels.reason}=${s.value}`)).toEqual(['depth=0', 'schema=0', 'registration=0', 'invalid=0']);
    expect(samples.filter((s) => s.name === 'conveyor_messages_nacked_total')).toHaveLength(1);
    expect(valueOf(samples, 'conveyor_messages_enqueued_total', { topic: 'orders', otel_scope_name: 'conveyor' })).toBe(4);
    expect(valueOf(samples, 'conveyor_messages_acked_total', { topic: 'orders' })).toBe(2);
    expect(valueOf(samples, 'conveyor_claims_total', { topic: 'orders', result: 'empty' })).toBe(1);
    expect(valueOf(samples, 'conveyor_messages_nacked_total', { topic: 'orders', outcome: 'dlq' })).toBe(1);
    // A second scrape reads the same totals: cumulative, not reset by being read.
    expect(valueOf(parseMetrics(await scrape()), 'conveyor_messages_enqueued_total', { topic: 'orders' })).toBe(4);
  });

  it('beyond 2,000 series an instrument counts into one overflow series, as OpenTelemetry does', async () => {
    registry = new MetricsRegistry();
    for (let i = 0; i < 2005; i++) registry.message('enqueued', `topic-${i}`);
    const samples = parseMetrics(await scrape()).filter((s) => s.name === 'conveyor_messages_enqueued_total');
    expect(samples).toHaveLength(2001);
    expect(valueOf(samples, 'conveyor_messages_enqueued_total', { otel_metric_overflow: 'true' })).toBe(5);
    expect(valueOf(samples, 'conveyor_messages_enqueued_total', { topic: 'topic-1999' })).toBe(1);
  });
});
