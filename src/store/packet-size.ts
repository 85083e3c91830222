import type { Knex } from 'knex';
import { capabilities } from './capabilities.js';

/** Room in one statement beside its payloads: metadata (64 KiB, escaped), key, topic, ids and SQL. */
const STATEMENT_ROOM = 256 * 1024;
/** What one multi-row INSERT may carry in payloads and metadata (chunkRows' budget), before hex doubles it. */
const BATCH_CHUNK_BYTES = 4 * 1024 * 1024;

/**
 * MySQL/MariaDB: refuses to start when the server's max_allowed_packet cannot carry the largest payload the
 * configuration allows. mysql2 sends a payload as hex text (twice its size); a statement over the packet
 * limit fails and drops its connection, so such an enqueue would answer 500 or 503 (retried in vain) rather
 * than be stored. Said once at start-up, where an operator looks, instead of on the first large message.
 */
export async function checkPacketSize(db: Knex, maxPayloadBytes: number): Promise<void> {
  if (!capabilities(db).maxAllowedPacket) return;
  const [rows] = (await db.raw('SELECT @@max_allowed_packet AS packet')) as [Array<{ packet: unknown }>];
  const packet = Number(rows[0]?.packet);
  const needed = Math.max(2 * maxPayloadBytes, 2 * BATCH_CHUNK_BYTES) + STATEMENT_ROOM;
  if (Number.isFinite(packet) && packet < needed) {
    throw new Error(
      `the database's max_allowed_packet (${packet} bytes) is too small for queue.max_payload_bytes ${maxPayloadBytes}: ` +
        `a statement may need ${needed} bytes (payloads travel as hex); raise max_allowed_packet to at least ${needed}, or lower queue.max_payload_bytes`,
    );
  }
}
