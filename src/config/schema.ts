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

/**
 * Every key of contract §1, with its default and a one-line description (`conveyor <command> --help` and the
 * configuration reference print them); durations become seconds. `sensitive` marks what `conveyor config
 * check` redacts: a whole value (`secret`) or the password inside a URL (`url-password`).
 */
export const configSchema = z.strictObject({
  server: z
    .strictObject({
      http_port: port.default(8080).describe('HTTP API and /metrics port (0 = any free port)'),
      grpc_port: port.default(50051).describe('gRPC port (0 = any free port)'),
      host: z.string().default('0.0.0.0').describe('listen address of HTTP, gRPC and the metrics port'),
      trust_proxy: bool.default(false).describe('believe X-Forwarded-For for the client IP (login rate limit); only behind a proxy that sets it'),
      grpc_tls_cert: z.string().default('').describe('PEM certificate file; with server.grpc_tls_key, gRPC speaks TLS only'),
      grpc_tls_key: z.string().default('').describe('PEM private key file of server.grpc_tls_cert'),
      shutdown_timeout: duration('25s').describe('how long SIGTERM waits for in-flight requests'),
    })
    .prefault({}),
  db: z
    .strictObject({
      url: z.string().default('sqlite:./data/conveyor.db').meta({ description: 'sqlite:<path> or mysql://user:pass@host:3306/db', sensitive: 'url-password' }),
      pool_size: z.coerce.number().int().min(1).max(200).default(16).describe('MySQL connections per process (1 to 200; SQLite always uses one)'),
    })
    .prefault({}),
  queue: z
    .strictObject({
      visibility_timeout: duration('30s').describe('default visibility timeout of a dequeue'),
      max_retries: z.coerce.number().int().min(0).default(3).describe('default max_retries of a message'),
      dlq_threshold: z.coerce.number().int().min(0).default(3).describe('attempts before dead-lettering to <topic>.dlq; 0 disables'),
      message_ttl: duration('24h').describe('default TTL of a message; 0 = never expires'),
      max_payload_bytes: z.coerce.number().int().min(1).default(1_048_576).describe('larger payloads get 413'),
      require_topic_registration: bool.default(false).describe('enqueue and dequeue only on topics with a configuration (else 422)'),
      delete_reaper_schedule: z.string().default('').describe('cron (5 fields) of the delete reaper; "" = disabled; a stored schedule wins'),
      expiry_reaper_interval: duration('60s').describe('in-process expiry reaper period; 0 = off'),
      archive_reaper_interval: duration('1h').describe('in-process archive reaper period; 0 = off'),
      config_refresh_interval: duration('1s').describe('how often an instance checks for topic configuration changed elsewhere'),
    })
    .prefault({}),
  reapers: z
    .strictObject({ mode: z.enum(['in-process', 'external']).default('in-process').describe('in-process, or external: Kubernetes CronJobs run `conveyor reap` instead') })
    .prefault({}),
  auth: z
    .strictObject({
      enabled: bool.default(false).describe('require bearer tokens (JWT)'),
      jwt_secret: z.string().default('').meta({ description: 'HS256 secret, at least 32 bytes when auth is enabled', sensitive: 'secret' }),
      username: z.string().default('').describe('bootstrap admin, created at start-up when no user of that name exists'),
      password: z.string().default('').meta({ description: "the bootstrap admin's password (a warning below 12 characters)", sensitive: 'secret' }),
    })
    .prefault({}),
  // key_prefix (extension): namespaces every key this service writes, so instances of several deployments can share one Redis.
  redis: z
    .strictObject({
      url: z.string().default('').meta({ description: 'Redis for the shared login rate limit and cross-instance Subscribe wake-ups and acks; "" = none', sensitive: 'url-password' }),
      key_prefix: z.string().default('conveyor:').describe('prefix of every Redis key and channel'),
    })
    .prefault({}),
  metrics: z.strictObject({ port: port.default(0).describe('> 0: an unauthenticated /metrics listener on that port') }).prefault({}),
  // `conveyor controller` only: the Kubernetes operator (leader election timings default to client-go's).
  controller: z
    .strictObject({
      namespaces: z.string().default('').describe('conveyor controller: comma-separated namespaces to watch; "" = all'),
      namespace: z.string().default('').describe("where the Lease and the delete-reaper CronJob live; \"\" = the pod's own namespace, else default"),
      resync_period: duration('60s').describe('every resource is reconciled again this often (drift repair)'),
      lease_name: z.string().default('conveyor-controller').describe('the leader-election Lease'),
      lease_duration: duration('15s').describe("how long a leader's Lease lasts without renewal"),
      renew_deadline: duration('10s').describe('a leader that could not renew for this long steps down'),
      retry_period: duration('2s').describe('how often candidates try and the leader renews'),
      delete_reaper_cronjob: z.string().default('').describe('name of the delete-reaper CronJob kept equal to the stored schedule; "" = none'),
      schedule_sync_interval: duration('5s').describe('how often the stored schedule is compared with the CronJob'),
      watch_timeout: duration('5m').describe('a watch with no event and no bookmark for this long is restarted'),
      port: port.default(8081).describe("the controller's /healthz, /readyz and /metrics port"),
      host: z.string().default('0.0.0.0').describe("the controller port's listen address"),
    })
    .prefault({}),
  log: z
    .strictObject({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info').describe('fatal, error, warn, info, debug, trace or silent') })
    .prefault({}),
});

export type Config = z.output<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;
