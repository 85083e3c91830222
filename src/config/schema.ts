import { z } from 'zod';
import { parseDurationSeconds } from './duration.js';

const duration = (fallback: string) =>
  z
    .union([z.string(), z.number()])
    .default(fallback)
    .transform((value, ctx) => {
      const seconds = parseDurationSeconds(value);
      if (seconds === undefined) {
        ctx.addIssue({ code: 'custom', message: `expected a duration such as 30s, 5m, 24h or a number of seconds, got "${value}"` });
        return z.NEVER;
      }
      return seconds;
    });

const PORT_ERROR = 'expected a port number from 0 to 65535';
const port = z.coerce.number({ error: PORT_ERROR }).int({ error: PORT_ERROR }).min(0, { error: PORT_ERROR }).max(65535, { error: PORT_ERROR });
const bool = z.union([z.boolean(), z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1')], { error: 'expected true or false' });

/** Every key of contract §1, with its default; durations become seconds. */
export const configSchema = z.strictObject({
  server: z
    .strictObject({
      http_port: port.default(8080),
      grpc_port: port.default(50051),
      host: z.string().default('0.0.0.0'),
      trust_proxy: bool.default(false),
      grpc_tls_cert: z.string().default(''),
      grpc_tls_key: z.string().default(''),
      shutdown_timeout: duration('25s'),
    })
    .prefault({}),
  db: z
    .strictObject({
      url: z.string().default('sqlite:./data/conveyor.db'),
      pool_size: z.coerce.number().int().min(1).max(200).default(16),
    })
    .prefault({}),
  queue: z
    .strictObject({
      visibility_timeout: duration('30s'),
      max_retries: z.coerce.number().int().min(0).default(3),
      dlq_threshold: z.coerce.number().int().min(0).default(3),
      message_ttl: duration('24h'),
      max_payload_bytes: z.coerce.number().int().min(1).default(1_048_576),
      require_topic_registration: bool.default(false),
      delete_reaper_schedule: z.string().default(''),
      expiry_reaper_interval: duration('60s'),
      archive_reaper_interval: duration('1h'),
      config_refresh_interval: duration('1s'),
    })
    .prefault({}),
  reapers: z.strictObject({ mode: z.enum(['in-process', 'external']).default('in-process') }).prefault({}),
  auth: z
    .strictObject({
      enabled: bool.default(false),
      jwt_secret: z.string().default(''),
      username: z.string().default(''),
      password: z.string().default(''),
    })
    .prefault({}),
  // key_prefix (extension): namespaces every key this service writes, so instances of several deployments can share one Redis.
  redis: z.strictObject({ url: z.string().default(''), key_prefix: z.string().default('conveyor:') }).prefault({}),
  metrics: z.strictObject({ port: port.default(0) }).prefault({}),
  // `conveyor controller` only: the Kubernetes operator (leader election timings default to client-go's).
  controller: z
    .strictObject({
      namespaces: z.string().default(''),
      namespace: z.string().default(''),
      resync_period: duration('60s'),
      lease_name: z.string().default('conveyor-controller'),
      lease_duration: duration('15s'),
      renew_deadline: duration('10s'),
      retry_period: duration('2s'),
      delete_reaper_cronjob: z.string().default(''),
      schedule_sync_interval: duration('5s'),
      watch_timeout: duration('5m'),
      port: port.default(8081),
      host: z.string().default('0.0.0.0'),
    })
    .prefault({}),
  log: z.strictObject({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info') }).prefault({}),
});

export type Config = z.output<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;
