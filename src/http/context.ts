import type { Knex } from 'knex';
import type { AccessKeyService } from '../auth/access-keys.js';
import type { Authorizer } from '../auth/authorizer.js';
import type { UserService } from '../auth/users.js';
import type { Config } from '../config/schema.js';
import type { Logger } from '../log/logger.js';
import type { Maintenance } from '../maintenance.js';
import type { MetricsRegistry } from '../metrics/registry.js';
import type { MessageService } from '../queue/messages.js';
import type { TopicService } from '../queue/topics.js';
import type { Tracing } from '../tracing/tracing.js';

/** What the HTTP routes may use: domain services, never the store directly (readiness pings aside). */
export interface HttpContext {
  config: Config;
  logger: Logger;
  db: Knex;
  metrics: MetricsRegistry;
  messages: MessageService;
  topics: TopicService;
  /** Consumer groups, archive log and replay, reapers. */
  maintenance: Maintenance;
  auth: Authorizer;
  users: UserService;
  accessKeys: AccessKeyService;
  /** Spans of requests and messages; absent or off: none (docs/observability.md, Tracing). */
  tracing?: Tracing;
}
