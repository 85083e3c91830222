import mysql from 'mysql2/promise';

/**
 * Holds every claim of a throughput-limited topic back (MySQL): such a claim locks the topic's token bucket
 * row first, and this holds that lock, so a test can act while a claim is under way (a consumer leaving).
 * The bucket row must exist (after a first claim of the topic).
 */
export async function holdClaims(dbUrl: string, topic: string): Promise<{ waiting(): Promise<number>; release(): Promise<void> }> {
  const conn = await mysql.createConnection(dbUrl);
  await conn.query('BEGIN');
  await conn.query('SELECT tokens FROM topic_buckets WHERE topic = ? FOR UPDATE', [topic]);
  const [[{ id }]] = (await conn.query('SELECT CONNECTION_ID() AS id')) as any;
  return {
    /** Transactions waiting on the held lock. InnoDB refreshes its lock tables at most every 100 ms: poll slower. */
    waiting: async () =>
      Number(
        ((await conn.query(
          `SELECT COUNT(*) AS n FROM information_schema.INNODB_LOCK_WAITS w
           JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id WHERE b.trx_mysql_thread_id = ?`,
          [id],
        )) as any)[0][0].n,
      ),
    release: async () => {
      await conn.query('COMMIT');
      await conn.end();
    },
  };
}
