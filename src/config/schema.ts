import { z } from 'zod';
import { parseDurationSeconds } from './duration.js';
import { parseAllowedOrigins } from './origins.js';
import { MAX_DATA_SECONDS, MAX_DELAY_SECONDS, MAX_INT32, MAX_PAYLOAD_COLUMN, MAX_VISIBILITY_SECONDS } from '../queue/bounds.js';
import { validateCron } from '../reapers/cron-expression.js';
import { isInstanceName } from '../controller/instance.js';
import { topicOwnershipProblem } from '../controller/topic-ownership.js';

/**
 * Most durations drive a timer, and Node runs a timer longer than 2^31-1 ms (24.8 days) after 1 ms instead, so
 * a reaper set to run monthly would run a thousand times a second: they stop at 24 days.
 */
const TIMER_MAX_SECONDS = 24 * 86_400;

const longest = (seconds: number) => (seconds % 86_400 === 0 ? `${seconds / 86_400}d` : `${seconds / 3600}h`);

const duration = (fallback: string, maxSeconds = TIMER_MAX_SECONDS) =>
  z
    .union([z.string(), z.number()])
    .default(fallback)
    .transform((value, ctx) => {
      const seconds = parseDurationSeconds(value);
      if (seconds === undefined) {
        ctx.addIssue({ code: 'custom', message: `expected a duration such as 30s, 5m, 24h or a number of seconds, got "${value}"` });
        return z.NEVER;
      }
      if (seconds > maxSeconds) {
        ctx.addIssue({ code: 'custom', message: `expected a duration of at most ${longest(maxSeconds)}, got "${value}"` });
        return z.NEVER;
      }
      return seconds;
    });

/** A duration that may not be 0: a timeout of 0 would mean no limit at all, a period of 0 a busy loop. */
const positiveDuration = (fallback: string) => duration(fallback).refine((seconds) => seconds > 0, { error: 'expected a duration above 0' });

/**
 * Numbers from the environment: z.coerce.number() reads an empty variable (`VAR=` in a compose file, a Helm
 * value of "") as 0, which would turn dead-lettering off or pick a random port without a word. Refused.
 */
function nonBlank<T extends z.ZodType>(schema: T) {
  return z.preprocess((value, ctx) => {
    if (typeof value !== 'string' || value.trim() !== '') return value;
    ctx.addIssue({ code: 'custom', message: 'expected a number, got an empty value' });
    return z.NEVER;
  }, schema);
}

const PORT_ERROR = 'expected a port number from 0 to 65535';
const port = nonBlank(z.coerce.number({ error: PORT_ERROR }).int({ error: PORT_ERROR }).min(0, { error: PORT_ERROR }).max(65535, { error: PORT_ERROR }));
const isHttpUrl = (value: string) => {
  try {
    return ['http:', 'https:'].includes(new URL(value).protocol);
  } catch {
    return false;
  }
};
/** `name=value,name=value`, as OTEL_EXPORTER_OTLP_HEADERS (src/tracing/tracing.ts parses it). */
export const tracesHeadersValid = (value: string) => value.split(',').every((pair) => pair.trim() === '' || pair.indexOf('=') > 0);
const bool = z.union([z.boolean(), z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1')], { error: 'expected true or false' });

/**
 * Every configuration key, with its default and a one-line description (`conveyor <command> --help` and the
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
      tls_cert_file: z.string().default('').describe('PEM certificate (chain) file; with server.tls_key_file, the HTTP and gRPC ports speak TLS only'),
      tls_key_file: z.string().default('').describe('PEM private key file of server.tls_cert_file'),
      tls_client_ca_file: z.string().default('').describe('PEM CA bundle; when set, clients must present a certificate signed by it (mutual TLS)'),
      tls_reload_interval: duration('5s').describe('how often the TLS files are re-read for a rotated certificate; 0 = only at start-up'),
      shutdown_timeout: duration('25s').describe('how long SIGTERM waits for in-flight requests'),
      // Limits of the listeners (docs/security.md, Limits). In-cluster clients send a request's headers in one
      // packet and its body at LAN speed: 10 s for headers only ever ends a stalled or hostile client, and 60 s
      // receives the largest body (64 MiB) at ~1 MB/s. 65 s keep-alive outlives the 60 s idle timeout of common
      // load balancers, so they never reuse a connection this side just closed.
      http_headers_timeout: positiveDuration('10s').describe('a request whose headers have not all arrived after this gets 408 and its connection is closed'),
      http_request_timeout: positiveDuration('60s').describe('a request not received whole (headers and body) after this gets 408; at least server.http_headers_timeout'),
      http_keep_alive_timeout: positiveDuration('65s').describe('an idle keep-alive HTTP connection is closed after this'),
      // Far above what a cluster's clients keep open (pods x pool size), far below a container's file descriptors.
      http_max_connections: nonBlank(z.coerce.number().int().min(1)).default(4096).describe('open HTTP connections per instance; one more gets 503 with Retry-After and is closed'),
      http_max_header_bytes: nonBlank(z.coerce.number().int().min(1024).max(1_048_576)).default(16_384).describe("request line and headers larger than this get 431 (node's default 16 KiB)"),
      // As large as the largest request (a 64 MiB batch body): only a BatchDequeue of many large messages comes near.
      grpc_max_send_message_bytes: nonBlank(z.coerce.number().int().min(1024)).default(67_108_864).describe('a gRPC reply larger than this fails with RESOURCE_EXHAUSTED (its messages return after their visibility timeout)'),
      // 256: a client channel multiplexes far fewer calls at once (the benchmark runs 64); clients queue calls
      // beyond it rather than fail. 128 Subscribe streams: dozens of consumer processes can share one user on an
      // instance, and with auth off (counted per connection) a connection full of streams keeps room for its Acks.
      grpc_max_concurrent_streams: nonBlank(z.coerce.number().int().min(1)).default(256).describe('concurrent calls (HTTP/2 streams) per gRPC connection; clients wait for a free one'),
      subscribe_streams_per_user: nonBlank(z.coerce.number().int().min(1)).default(128).describe('open Subscribe streams per user (auth off: per connection) on each instance; one more fails with RESOURCE_EXHAUSTED'),
      // A waiting dequeue costs memory and a timer, no database connection: 1,000 covers a large consumer fleet's
      // long polls on one instance, and a bound keeps a flood of them from growing without one.
      max_waiting_dequeues: nonBlank(z.coerce.number().int().min(1)).default(1000).describe('dequeues waiting for messages at once (long polling: wait_seconds) on each instance; one more gets 429 (gRPC RESOURCE_EXHAUSTED)'),
      // A client that vanished without closing its connection (crash, partition) holds its Subscribe streams and
      // their slots of subscribe_streams_per_user until a ping goes unanswered: 30 s + 20 s.
      grpc_keepalive_time: positiveDuration('30s').describe('the server pings each gRPC connection this often'),
      grpc_keepalive_timeout: positiveDuration('20s').describe('a gRPC connection whose ping is not answered within this is closed'),
      grpc_max_connection_idle: duration('5m').describe('a gRPC connection without calls for this long is closed (clients reconnect when needed); 0 = never'),
      cors_allowed_origins: z
        .string()
        .default('')
        .superRefine((value, ctx) => {
          try {
            parseAllowedOrigins(value);
          } catch (err) {
            ctx.addIssue({ code: 'custom', message: (err as Error).message });
          }
        })
        .describe('comma-separated browser origins (https://ui.example.com) allowed to call the HTTP API cross-origin; "" = CORS off'),
    })
    .prefault({}),
  db: z
    .strictObject({
      url: z.string().default('sqlite:./data/conveyor.db').meta({ description: 'sqlite:<path> or mysql://user:pass@host:3306/db', sensitive: 'url-password' }),
      url_file: z.string().default('').describe('file holding db.url (a mounted Secret); not together with db.url'),
      pool_size: nonBlank(z.coerce.number().int().min(1).max(200)).default(16).describe('MySQL connections per process (1 to 200; SQLite always uses one)'),
      lock_wait_timeout: duration('0').describe('how long a statement waits for a lock before it is retried. MySQL/MariaDB: a row or table lock (innodb_lock_wait_timeout and lock_wait_timeout of the pool, whole seconds); 0 = the server\'s innodb_lock_wait_timeout. SQLite: the file\'s write lock held by another process; 0 = 5 s'),
    })
    .prefault({}),
  queue: z
    .strictObject({
      visibility_timeout: duration('30s', MAX_VISIBILITY_SECONDS)
        .refine((seconds) => seconds >= 1, { error: 'expected a duration of at least 1s, as a dequeue may ask' })
        .describe('default visibility timeout of a dequeue (at most 12h, as a request may ask)'),
      max_retries: nonBlank(z.coerce.number().int().min(0).max(MAX_INT32)).default(3).describe('default max_retries of a message'),
      dlq_threshold: nonBlank(z.coerce.number().int().min(0).max(MAX_INT32)).default(3).describe('attempts before dead-lettering to <topic>.dlq; 0 disables'),
      message_ttl: duration('24h', MAX_DATA_SECONDS).describe('default TTL of a message; 0 = never expires'),
      max_delay_seconds: nonBlank(z.coerce.number().int().min(0).max(MAX_DELAY_SECONDS))
        .default(MAX_DELAY_SECONDS)
        .describe(`the longest delay an enqueue (delay_seconds, deliver_at), a nack or a topic setting may ask, in seconds (at most ${MAX_DELAY_SECONDS}, 7 days)`),
      retry_backoff_seconds: nonBlank(z.coerce.number().int().min(0).max(MAX_DELAY_SECONDS))
        .default(0)
        .describe("default base of a topic's retry backoff: the n-th failed attempt waits min(max, base x 2^(n-1)) seconds (+-10 % jitter) before the retry; 0 = retry at once"),
      retry_backoff_max_seconds: nonBlank(z.coerce.number().int().min(0).max(MAX_DELAY_SECONDS))
        .default(3600)
        .describe("default cap of a topic's retry backoff, in seconds"),
      max_payload_bytes: nonBlank(z.coerce.number().int().min(1).max(MAX_PAYLOAD_COLUMN)).default(1_048_576).describe('larger payloads get 413'),
      max_dequeue_bytes: nonBlank(z.coerce.number().int().min(1))
        .default(4_194_304)
        .describe('what one dequeue answers at most: messages in order until their payloads, keys and metadata reach this size (always at least one); the rest stay pending, no attempt counted'),
      require_topic_registration: bool.default(false).describe('enqueue and dequeue only on topics with a configuration (else 422)'),
      delete_reaper_schedule: z
        .string()
        .default('')
        .superRefine((value, ctx) => {
          try {
            if (value.trim() !== '') validateCron(value.trim());
          } catch (err) {
            ctx.addIssue({ code: 'custom', message: (err as Error).message });
          }
        })
        .describe('cron (5 fields) of the delete reaper; "" = disabled; a stored schedule wins'),
      expiry_reaper_interval: duration('60s').describe('in-process expiry reaper period; 0 = off'),
      archive_reaper_interval: duration('1h').describe('in-process archive reaper period; 0 = off'),
      config_refresh_interval: positiveDuration('1s').describe('how often an instance checks for topic configuration changed elsewhere'),
    })
    .prefault({}),
  reapers: z
    .strictObject({ mode: z.enum(['in-process', 'external']).default('in-process').describe('in-process, or external: Kubernetes CronJobs run `conveyor reap` instead') })
    .prefault({}),
  auth: z
    .strictObject({
      enabled: bool.default(false).describe('require bearer tokens (a JWT, an access key or a ServiceAccount token)'),
      jwt_secret: z.string().default('').meta({ description: 'HS256 secret, at least 32 bytes when auth is enabled', sensitive: 'secret' }),
      jwt_secret_file: z.string().default('').describe('file holding auth.jwt_secret (a mounted Secret); not together with auth.jwt_secret'),
      username: z.string().default('').describe('bootstrap admin, created at start-up when no user of that name exists'),
      password: z.string().default('').meta({ description: "the bootstrap admin's password (a warning below 12 characters)", sensitive: 'secret' }),
      password_file: z.string().default('').describe('file holding auth.password (a mounted Secret); not together with auth.password'),
      credentials_key: z
        .string()
        .default('')
        .meta({ description: 'AES-256-GCM key (32 bytes in base64) that encrypts access keys\' secrets; "" = access keys off (their endpoints answer 503)', sensitive: 'secret' }),
      credentials_key_file: z.string().default('').describe('file holding auth.credentials_key (a mounted Secret); not together with auth.credentials_key'),
      previous_credentials_key: z
        .string()
        .default('')
        .meta({ description: 'the credentials key being rotated out: still read, never written (conveyor rotate-credentials-key re-encrypts under auth.credentials_key)', sensitive: 'secret' }),
      previous_credentials_key_file: z.string().default('').describe('file holding auth.previous_credentials_key; not together with auth.previous_credentials_key'),
      kubernetes_enabled: bool.default(false).describe('accept projected Kubernetes ServiceAccount tokens as bearer tokens (needs auth.enabled and auth.kubernetes_issuer)'),
      kubernetes_issuer: z.string().default('').describe("the cluster's service-account issuer, the tokens' `iss` (kubectl get --raw /.well-known/openid-configuration)"),
      kubernetes_audience: z.string().default('conveyor').describe('the audience ServiceAccount tokens must name (`aud`): the projected volume\'s audience'),
      kubernetes_jwks_url: z.string().default('').describe("URL of the issuer's keys (JWKS); \"\" = the jwks_uri of the issuer's OIDC discovery document"),
    })
    .prefault({}),
  // key_prefix (extension): namespaces every key this service writes, so instances of several deployments can share one Redis.
  redis: z
    .strictObject({
      url: z.string().default('').meta({ description: 'Redis for the shared login rate limit, cross-instance Subscribe wake-ups and acks, and cache invalidation across instances; "" = none', sensitive: 'url-password' }),
      url_file: z.string().default('').describe('file holding redis.url (a mounted Secret); not together with redis.url'),
      key_prefix: z.string().default('conveyor:').describe('prefix of every Redis key and channel'),
    })
    .prefault({}),
  metrics: z.strictObject({ port: port.default(0).describe('> 0: an unauthenticated, plaintext listener on that port for /metrics, /healthz and /readyz (even with TLS on)') }).prefault({}),
  // Distributed tracing (docs/observability.md, Tracing): off until an endpoint is set.
  telemetry: z
    .strictObject({
      traces_endpoint: z
        .string()
        .default('')
        .refine((v) => v === '' || isHttpUrl(v), { error: 'expected the http:// or https:// URL of an OTLP/HTTP traces endpoint, such as http://tempo:4318/v1/traces' })
        .describe('OTLP/HTTP URL spans are exported to (http://collector:4318/v1/traces); "" = tracing off'),
      traces_headers: z
        .string()
        .default('')
        .refine(tracesHeadersValid, { error: 'expected name=value pairs separated by commas' })
        .meta({ description: 'headers of every export, name=value,name=value (an API key of a hosted collector)', sensitive: 'secret' }),
      traces_headers_file: z.string().default('').describe('file holding telemetry.traces_headers (a mounted Secret); not together with telemetry.traces_headers'),
      traces_sample_ratio: nonBlank(z.coerce.number().min(0).max(1))
        .default(0.1)
        .describe('fraction of new traces recorded (0 to 1); a request with a traceparent follows its sampled flag; 0 = none at all'),
      traces_export_interval: positiveDuration('5s').describe('how long finished spans wait to be exported in one batch'),
    })
    .prefault({}),
  // `conveyor controller` only: the Kubernetes operator (leader election timings default to client-go's).
  controller: z
    .strictObject({
      namespaces: z.string().default('').describe('conveyor controller: comma-separated namespaces to watch; "" = all'),
      // One cluster may run several Conveyors (staging and production): each reconciles only the resources
      // labelled for it, and names its finalizer and Lease after itself, so they never touch each other's.
      instance: z
        .string()
        .default('')
        .refine((v) => v === '' || isInstanceName(v), { error: 'expected a lowercase DNS label of at most 53 characters (a Helm release name), or "" for none' })
        .describe('reconcile only resources labelled conveyor.dev/instance=<instance>; "" = every resource'),
      topic_ownership: z
        .string()
        .default('')
        .superRefine((v, ctx) => {
          const problem = topicOwnershipProblem(v);
          if (problem) ctx.addIssue({ code: 'custom', message: problem });
        })
        .describe('which topics the resources of each namespace may manage: "team-a=orders,orders.*;team-b=payments.*"; "" = any topic from any namespace'),
      adopt_existing: bool.default(true).describe('a resource takes over a topic setting made through the HTTP API; false = it reports TopicExists instead'),
      namespace: z.string().default('').describe("where the Lease and the delete-reaper CronJob live; \"\" = the pod's own namespace, else default"),
      resync_period: positiveDuration('60s').describe('every resource is reconciled again this often (drift repair)'),
      lease_name: z.string().default('conveyor-controller').describe('the leader-election Lease'),
      lease_duration: positiveDuration('15s').describe("how long a leader's Lease lasts without renewal"),
      renew_deadline: positiveDuration('10s').describe('a leader that could not renew for this long steps down'),
      retry_period: positiveDuration('2s').describe('how often candidates try and the leader renews'),
      delete_reaper_cronjob: z.string().default('').describe('name of the delete-reaper CronJob the controller creates and keeps on the stored schedule; "" = none'),
      delete_reaper_cronjob_template: z
        .string()
        .default('')
        .describe('file (YAML or JSON) holding that CronJob: its labels, annotations and spec; required with controller.delete_reaper_cronjob'),
      schedule_sync_interval: positiveDuration('5s').describe('how often the stored schedule is compared with the CronJob'),
      watch_timeout: positiveDuration('5m').describe('a watch with no event and no bookmark for this long is restarted; a list or watch request unanswered for this long is abandoned and retried'),
      port: port.default(8081).describe("the controller's /healthz, /readyz and /metrics port"),
      host: z.string().default('0.0.0.0').describe("the controller port's listen address"),
    })
    // client-go's rule: a leader must give up (renew deadline) before a follower may take over (lease duration),
    // or two leaders reconcile at once; and it must get more than one try (retry period, with its jitter).
    .superRefine((c, ctx) => {
      if (!(c.lease_duration > c.renew_deadline)) ctx.addIssue({ code: 'custom', path: ['lease_duration'], message: 'must be longer than controller.renew_deadline' });
      if (!(c.renew_deadline > c.retry_period * 1.2)) ctx.addIssue({ code: 'custom', path: ['renew_deadline'], message: 'must be longer than 1.2 x controller.retry_period' });
      if (!(c.retry_period > 0)) ctx.addIssue({ code: 'custom', path: ['retry_period'], message: 'expected a duration above 0' });
      // The controller creates the CronJob: it cannot without knowing what the CronJob runs.
      if (c.delete_reaper_cronjob && !c.delete_reaper_cronjob_template)
        ctx.addIssue({ code: 'custom', path: ['delete_reaper_cronjob_template'], message: 'is required with controller.delete_reaper_cronjob (the CronJob the controller creates)' });
    })
    .prefault({}),
  log: z
    .strictObject({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info').describe('fatal, error, warn, info, debug, trace or silent') })
    .prefault({}),
  audit: z
    .strictObject({
      retention_days: nonBlank(z.coerce.number().int().min(0)).default(90).describe('the archive reaper removes audit records older than this many days; 0 = keep forever'),
    })
    .prefault({}),
  // The SQS-compatible API on the HTTP port (docs/sqs.md).
  sqs: z
    .strictObject({
      enabled: bool.default(true).describe('serve the SQS-compatible API (AWS JSON 1.0 protocol) on the HTTP port: POST / and POST /<account_id>/<queue>'),
      account_id: z
        .string()
        .regex(/^\d{12}$/, { error: 'expected 12 digits' })
        .default('000000000000')
        .describe('the account id in queue URLs (<scheme>://<host>/<account_id>/<queue>) and queue ARNs'),
      region: z
        .string()
        .regex(/^[a-z0-9-]{1,32}$/, { error: 'expected a region name such as us-east-1' })
        .default('us-east-1')
        .describe('the region named in queue ARNs; requests signed for any region are accepted'),
    })
    .prefault({}),
});

export type Config = z.output<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;
