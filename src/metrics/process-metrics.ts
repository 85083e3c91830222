import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { BatchObservableResult, Meter } from '@opentelemetry/api';

/** Resolution of the event-loop delay sampler: one unref'd libuv timer per registry, 20 ms apart. */
const EVENT_LOOP_RESOLUTION_MS = 20;
/** The lag's window: a scrape sees the last complete one and the one under way (30-60 s in all). */
const EVENT_LOOP_WINDOW_MS = 30_000;

/**
 * Process metrics named like prom-client's defaults, so stock Node.js dashboards understand them:
 * process_cpu_seconds_total, process_resident_memory_bytes, process_start_time_seconds,
 * nodejs_heap_size_used_bytes, nodejs_heap_size_total_bytes and nodejs_eventloop_lag_seconds.
 *
 * Observable instruments on the registry's meter: the values are read only when Prometheus scrapes, and
 * served by the same exporter (no extra HTTP server). The only background work is the event-loop delay
 * histogram of perf_hooks (an unref'd timer every 20 ms, and one every 30 s that starts its next window),
 * stopped by the function this returns.
 *
 * nodejs_eventloop_lag_seconds is the higher of two p99s of the event-loop delay, the last complete 30 s
 * window's and the current window's, less the sampling interval, which every sample includes; not the
 * single-sample lag of prom-client's gauge of the same name, so sustained lag between two scrapes shows up
 * instead of being missed. The windows do not depend on who scrapes: the admin UI reads /metrics every few
 * seconds, and a histogram reset by each collection left Prometheus only the seconds since the UI's last read.
 */
export function observeProcessMetrics(meter: Meter): () => void {
  const cpu = meter.createObservableCounter('process_cpu_seconds_total', {
    description: 'Total user and system CPU time spent in seconds',
    unit: 's',
  });
  const rss = meter.createObservableGauge('process_resident_memory_bytes', { description: 'Resident memory size in bytes' });
  const start = meter.createObservableGauge('process_start_time_seconds', {
    description: 'Start time of the process since unix epoch in seconds',
    unit: 's',
  });
  const heapUsed = meter.createObservableGauge('nodejs_heap_size_used_bytes', { description: 'Process heap size used from Node.js in bytes' });
  const heapTotal = meter.createObservableGauge('nodejs_heap_size_total_bytes', { description: 'Process heap size from Node.js in bytes' });
  const lag = meter.createObservableGauge('nodejs_eventloop_lag_seconds', {
    description: 'Event loop lag in seconds: p99 of the event-loop delay over the last 30-60 s, less the 20 ms sampling interval (perf_hooks.monitorEventLoopDelay)',
    unit: 's',
  });

  const delay = monitorEventLoopDelay({ resolution: EVENT_LOOP_RESOLUTION_MS });
  delay.enable();
  // No sample yet (right after a window starts): 0 rather than the histogram's NaN/max.
  const currentP99Ns = () => (delay.count > 0 ? delay.percentile(99) : 0);
  let lastWindowP99Ns = 0;
  const nextWindow = setInterval(() => {
    lastWindowP99Ns = currentP99Ns();
    delay.reset();
  }, EVENT_LOOP_WINDOW_MS);
  nextWindow.unref();
  const startSeconds = performance.timeOrigin / 1000;

  const callback = (result: BatchObservableResult) => {
    const usage = process.cpuUsage();
    result.observe(cpu, (usage.user + usage.system) / 1e6);
    const memory = process.memoryUsage();
    result.observe(rss, memory.rss);
    result.observe(heapUsed, memory.heapUsed);
    result.observe(heapTotal, memory.heapTotal);
    result.observe(start, startSeconds);
    const p99Ns = Math.max(lastWindowP99Ns, currentP99Ns());
    // The histogram includes the sampling resolution itself; what is above it is the lag.
    result.observe(lag, Math.max(0, p99Ns / 1e9 - EVENT_LOOP_RESOLUTION_MS / 1000));
  };
  const instruments = [cpu, rss, start, heapUsed, heapTotal, lag];
  meter.addBatchObservableCallback(callback, instruments);

  let stopped = false;
  return () => {
    if (stopped) return;
    stopped = true;
    clearInterval(nextWindow);
    delay.disable();
    meter.removeBatchObservableCallback(callback, instruments);
  };
}
