import type { Knex } from 'knex';

/**
 * What the database of a pool can do and what it is: the one place where the engines differ. Everywhere else
 * asks for the capability it needs (`capabilities(trx).rowLocks`), never for an engine by name.
 */
export interface Capabilities {
  /** The SQL grammar, only where statements spell the same thing differently (clock functions, INSERT IGNORE). */
  readonly dialect: 'sqlite' | 'mysql';
  /** One write transaction at a time: SQLite's BEGIN IMMEDIATE takes the file's write lock; MySQL/MariaDB run many at once. */
  readonly singleWriter: boolean;
  /** Reads can lock rows until commit (FOR UPDATE, LOCK IN SHARE MODE: InnoDB); SQLite has none and needs none (singleWriter). */
  readonly rowLocks: boolean;
  /** FOR UPDATE SKIP LOCKED, so concurrent claims pass each other's rows (MySQL/MariaDB); SQLite claims in one UPDATE ... RETURNING. */
  readonly skipLocked: boolean;
  /** Partial (WHERE) unique indexes: SQLite's pending-key index is one; MySQL/MariaDB have none (a generated pending_key column instead). */
  readonly partialIndexes: boolean;
  /** An insert that meets a unique key updates through MySQL's ON DUPLICATE KEY UPDATE or SQLite's ON CONFLICT ... DO UPDATE. */
  readonly upsert: 'onDuplicateKey' | 'onConflict';
  /** `DELETE ... RETURNING`: SQLite (3.35+) and MariaDB (10.0.5+) have it, MySQL 8 does not. Asked of the server. */
  readonly deleteReturning: boolean;
  /** `INSERT ... RETURNING`: SQLite (3.35+) and MariaDB (10.5+) have it, MySQL 8 does not. Asked of the server. */
  readonly insertReturning: boolean;
  /** `BEGIN NOT ATOMIC ... END` sent as a statement, outside a stored program: MariaDB (10.1.1+); MySQL 8 has none. Asked of the server. */
  readonly compoundStatements: boolean;
  /** `UPDATE ... RETURNING`: SQLite (3.35+); neither MariaDB nor MySQL 8 has it. */
  readonly updateReturning: boolean;
  /**
   * An ordering key's line is in its rows' insertion order (SQLite's rowid, which every index of a rowid table
   * ends with), so `messages_ordering` is `(topic, ordering_key)`; MySQL/MariaDB order it by `ordering_seq`.
   */
  readonly linesInRowOrder: boolean;
  /** `VALUES (...), (...)` as rows of a UNION, without ROW(): MariaDB and SQLite; MySQL 8 wants ROW() (none before 8.0.19). Asked of the server. */
  readonly tableValueConstructor: boolean;
  /** The database runs in this process (SQLite): a statement costs no network round trip, and its clock is this process's. */
  readonly inProcess: boolean;
  /** A pooled connection runs `query(sql, values, callback)` itself (mysql2), past knex's placeholder rewrite; better-sqlite3's does not. */
  readonly driverQuery: boolean;
  /** A statement may not exceed the server's max_allowed_packet (MySQL/MariaDB); SQLite sets no such limit apart. */
  readonly maxAllowedPacket: boolean;
  /** The server can be switched read-only (@@read_only: a replica, a primary demoted in a failover); SQLite has no such mode. */
  readonly readOnlyMode: boolean;
  /** The server can be a Galera cluster node (MySQL/MariaDB), which replicates only InnoDB tables with a primary key. */
  readonly clusterable: boolean;
  /**
   * A Galera node, as the start-up check found (recordGalera): certification-based multi-primary, whose commits
   * another node applies a moment later (so a miss is read again causally, wsrep_sync_wait), ready while wsrep_ready.
   */
  readonly galera: boolean;
}

/** The capabilities the server is asked about (SELECT VERSION()): known once capabilitiesOf(db) has resolved. */
export type ProbedCapability = 'deleteReturning' | 'insertReturning' | 'tableValueConstructor' | 'compoundStatements';

type Table = { -readonly [K in keyof Capabilities]: Capabilities[K] };

/**
 * One table per pool, keyed by the knex client's config: a transaction's client is a copy of the pool's (knex's
 * makeTxClient) that shares its config, so a transaction finds its pool's table.
 */
const tables = new WeakMap<object, Table>();
const probes = new WeakMap<object, Promise<Capabilities>>();

function keyOf(db: Knex): object {
  return (db.client as { config: object }).config;
}

function tableOf(db: Knex): Table {
  const key = keyOf(db);
  let table = tables.get(key);
  if (!table) {
    // The dialect, not config.client: SQLite's client is a class of ours (sqlite-client.ts), not a name.
    const mysql = (db.client as { dialect?: string }).dialect === 'mysql';
    table = {
      dialect: mysql ? 'mysql' : 'sqlite',
      singleWriter: !mysql,
      rowLocks: mysql,
      skipLocked: mysql,
      partialIndexes: !mysql,
      upsert: mysql ? 'onDuplicateKey' : 'onConflict',
      // MySQL/MariaDB: the portable answer until the probe says MariaDB.
      deleteReturning: !mysql,
      insertReturning: !mysql,
      compoundStatements: false,
      updateReturning: !mysql,
      linesInRowOrder: !mysql,
      tableValueConstructor: !mysql,
      inProcess: !mysql,
      driverQuery: mysql,
      maxAllowedPacket: mysql,
      readOnlyMode: mysql,
      clusterable: mysql,
      galera: false,
    };
    tables.set(key, table);
  }
  return table;
}

/**
 * The pool's capabilities that need no query: the dialect's, and what the start-up checks found (galera). Never
 * probes; the probed ones are read through capabilitiesOf.
 */
export function capabilities(db: Knex): Omit<Capabilities, ProbedCapability> {
  return tableOf(db);
}

/**
 * The pool's whole table, the server asked once per pool (start-up awaits it, src/server.ts, so hot paths
 * never probe). MySQL/MariaDB: whether it is MariaDB, whose SQL goes further than MySQL 8's where the store
 * uses it (`DELETE ... RETURNING` and `INSERT ... RETURNING`, table value constructors without `ROW`, compound statements); a
 * failed probe answers no, which only costs the portable form. SQLite: nothing to ask.
 */
export function capabilitiesOf(db: Knex): Promise<Capabilities> {
  const key = keyOf(db);
  let answer = probes.get(key);
  if (!answer) {
    const table = tableOf(db);
    answer =
      table.dialect !== 'mysql'
        ? Promise.resolve(table)
        : db
            .raw('SELECT VERSION() AS version')
            .then(([rows]: [Array<{ version: string }>]) => /mariadb/i.test(rows[0]?.version ?? ''))
            .catch(() => false)
            .then((mariaDb) => {
              table.deleteReturning = mariaDb;
              table.insertReturning = mariaDb;
              table.tableValueConstructor = mariaDb;
              table.compoundStatements = mariaDb;
              return table;
            });
    probes.set(key, answer);
  }
  return answer;
}

/** Records that the pool's server is a Galera node whose schema passed the start-up check (src/store/galera-checks.ts). */
export function recordGalera(db: Knex): void {
  tableOf(db).galera = true;
}
