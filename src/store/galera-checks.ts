import type { Knex } from 'knex';
import type { Logger } from '../log/logger.js';
import { capabilities, recordGalera } from './capabilities.js';
import { withDbRetry } from './retry.js';

/**
 * Galera (MariaDB Galera Cluster, Percona XtraDB Cluster) replicates row changes of InnoDB tables, certified
 * by primary key. A table without a primary key, or of another engine, is silently not replicated or breaks
 * certification, so the service refuses to start on such a schema rather than lose data on a failover.
 * Conveyor's own statements need nothing else: no LOCK TABLES, no GET_LOCK (leases are rows,
 * src/store/leases.ts), every table InnoDB with a primary key (knex's bookkeeping tables included).
 */

/** Raised by the readiness probes while the node is not part of the primary component. */
export class NodeNotReady extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NodeNotReady';
  }
}

async function variable(db: Knex, sql: string): Promise<Map<string, string>> {
  const [rows] = (await db.raw(sql)) as [Array<{ Variable_name: string; Value: unknown }>];
  return new Map(rows.map((r) => [String(r.Variable_name), String(r.Value ?? '')]));
}

/** A Galera node: the wsrep provider is on (plain MariaDB builds have the variable too, set to OFF). */
export async function isGalera(db: Knex): Promise<boolean> {
  if (!capabilities(db).clusterable) return false;
  return (await variable(db, "SHOW VARIABLES LIKE 'wsrep_on'")).get('wsrep_on')?.toUpperCase() === 'ON';
}

/**
 * Every table of the service's schema that lacks a primary key or is not InnoDB, one sentence each. Two
 * queries, each filtered on the current schema by a constant: a correlated subquery over
 * information_schema.TABLE_CONSTRAINTS made MariaDB 10.11 open every schema of the server, and it crashed
 * (signal 11) when another database was being dropped meanwhile.
 */
export async function clusterSchemaProblems(db: Knex): Promise<string[]> {
  const [tables] = (await db.raw(
    `SELECT TABLE_NAME AS name, ENGINE AS engine FROM information_schema.TABLES
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME`,
  )) as [Array<{ name: string; engine: string | null }>];
  const [keyed] = (await db.raw(
    `SELECT DISTINCT TABLE_NAME AS name FROM information_schema.TABLE_CONSTRAINTS
     WHERE TABLE_SCHEMA = DATABASE() AND CONSTRAINT_TYPE = 'PRIMARY KEY'`,
  )) as [Array<{ name: string }>];
  const withPrimaryKey = new Set(keyed.map((row) => row.name));
  const problems: string[] = [];
  for (const row of tables) {
    if (String(row.engine ?? '').toLowerCase() !== 'innodb') problems.push(`table ${row.name} uses the ${row.engine ?? 'unknown'} engine, not InnoDB`);
    if (!withPrimaryKey.has(row.name)) problems.push(`table ${row.name} has no primary key`);
  }
  return problems;
}

export interface ClusterCheckOptions {
  /** Decided by the caller instead of asking the server (tests on a plain server). */
  galera?: boolean;
}

/**
 * Start-up checks for MySQL/MariaDB, after migrations: on a Galera node, refuse a schema the cluster would not
 * replicate, and log the cluster's size and state once; on a plain server, only warn about such tables (they
 * would be refused after a move to Galera). SQLite: nothing to check.
 */
export async function checkClusterSchema(db: Knex, logger: Logger, options: ClusterCheckOptions = {}): Promise<void> {
  if (!capabilities(db).clusterable) return;
  const galera = options.galera ?? (await withDbRetry(db, () => isGalera(db)));
  // Another pod's migration DDL on the same cluster can abort this read with 1213: retried like any store call.
  const problems = await withDbRetry(db, () => clusterSchemaProblems(db));
  if (!galera) {
    if (problems.length > 0) logger.warn({ problems }, 'tables a Galera cluster would not replicate (only InnoDB tables with a primary key are)');
    return;
  }
  if (problems.length > 0) {
    throw new Error(
      `refusing to start on a Galera cluster: ${problems.join('; ')}. Galera replicates only InnoDB tables with a primary key; fix or move these tables out of the service's database`,
    );
  }
  recordGalera(db);
  const status = await withDbRetry(db, () => variable(db, "SHOW STATUS WHERE Variable_name IN ('wsrep_cluster_size', 'wsrep_cluster_status', 'wsrep_local_state_comment', 'wsrep_ready')"));
  logger.info(
    {
      galera: true,
      clusterSize: Number(status.get('wsrep_cluster_size') ?? 0),
      clusterStatus: status.get('wsrep_cluster_status') ?? '',
      localState: status.get('wsrep_local_state_comment') ?? '',
      ready: status.get('wsrep_ready') ?? '',
    },
    'database is a Galera cluster node',
  );
}

/**
 * Readiness of the database for this instance: it answers, and on a Galera node (as detected at start) the
 * node is ready for application use (wsrep_ready = ON). A node cut off from the primary component refuses
 * queries with 1047, so the instance leaves the load balancer until it rejoined. SHOW STATUS answers even
 * then, so it doubles as the ping. Any MySQL/MariaDB server is also not ready while it runs read-only (its
 * writes would fail with 1290/1836). SQLite: one `select 1`.
 */
export async function checkDatabaseReady(db: Knex): Promise<void> {
  const { readOnlyMode, galera } = capabilities(db);
  if (!readOnlyMode) {
    await db.raw('select 1');
    return;
  }
  if (galera) {
    const ready = (await variable(db, "SHOW STATUS LIKE 'wsrep_ready'")).get('wsrep_ready') ?? '';
    if (ready.toUpperCase() !== 'ON') throw new NodeNotReady(`database node not ready: wsrep_ready is ${ready || 'unknown'}`);
  }
  // A server that refuses writes (a replica, a primary demoted in a failover) cannot serve this instance.
  const [rows] = (await db.raw('SELECT @@GLOBAL.read_only AS read_only')) as [Array<{ read_only: number | string }>];
  if (Number(rows[0]?.read_only) === 1) throw new NodeNotReady('database is read-only (read_only is ON)');
}
