import type { Knex } from 'knex';
import * as initial from './20261122000000_initial.js';
import * as usersGrants from './20261122040000_users_grants.js';
import * as consumerGroupsArchive from './20261122050000_consumer_groups_archive.js';
import * as engineParity from './20261122060000_engine_parity.js';
import * as queueIndex from './20261122070000_queue_index.js';
import * as auditLog from './20261123010000_audit_log.js';
import * as leases from './20261123020000_leases.js';
import * as schemaVersions from './20261126010000_schema_versions.js';
import * as passwordVersion from './20261127010000_password_version.js';
import * as auditActorId from './20261127020000_audit_actor_id.js';
import * as deliveryTiming from './20261128010000_delivery_timing.js';
import * as accessKeys from './20261128030000_access_keys.js';
import * as orderingKeys from './20261128020000_ordering_keys.js';
import * as grantsManagedBy from './20261128040000_grants_managed_by.js';
import * as sqsApi from './20261128050000_sqs_api.js';
import * as queueDefaults from './20261128060000_queue_defaults.js';
import * as linesInRowOrder from './20261129010000_lines_in_row_order.js';
import * as orderingIndexWithoutPlain from './20261129020000_ordering_index_without_plain.js';
import * as orderingKeysExact from './20261129030000_ordering_keys_exact.js';
import * as deliveriesVisibilityById from './20261201010000_deliveries_visibility_by_id.js';
import * as deliveriesExpiryStatistics from './20261201020000_deliveries_expiry_statistics.js';

interface Migration {
  up(db: Knex): Promise<void>;
  down(db: Knex): Promise<void>;
}

// Listed here rather than discovered on disk so the same list works from src/ (tsx, vitest) and dist/.
const migrations: Record<string, Migration> = {
  '20261122000000_initial': initial,
  '20261122040000_users_grants': usersGrants,
  '20261122050000_consumer_groups_archive': consumerGroupsArchive,
  '20261122060000_engine_parity': engineParity,
  '20261122070000_queue_index': queueIndex,
  '20261123010000_audit_log': auditLog,
  '20261123020000_leases': leases,
  '20261126010000_schema_versions': schemaVersions,
  '20261127010000_password_version': passwordVersion,
  '20261127020000_audit_actor_id': auditActorId,
  '20261128010000_delivery_timing': deliveryTiming,
  '20261128030000_access_keys': accessKeys,
  '20261128020000_ordering_keys': orderingKeys,
  '20261128040000_grants_managed_by': grantsManagedBy,
  '20261128050000_sqs_api': sqsApi,
  '20261128060000_queue_defaults': queueDefaults,
  '20261129010000_lines_in_row_order': linesInRowOrder,
  '20261129020000_ordering_index_without_plain': orderingIndexWithoutPlain,
  '20261129030000_ordering_keys_exact': orderingKeysExact,
  '20261201010000_deliveries_visibility_by_id': deliveriesVisibilityById,
  '20261201020000_deliveries_expiry_statistics': deliveriesExpiryStatistics,
};

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations).sort(),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name],
};
