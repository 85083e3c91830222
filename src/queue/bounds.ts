/**
 * The largest values a setting may take because of where it is stored or what it computes, shared by the
 * HTTP API, the controller's resources and the configuration file.
 */

/** MySQL's signed INT: the column of a message's and a topic's max_retries. */
export const MAX_INT32 = 2_147_483_647;

/**
 * Durations that date messages (a TTL, a replay window) stop at 100 years: now plus or minus one stays far
 * inside what a JavaScript date can hold (about 275,000 years either side of 1970), so every stored time can
 * be shown.
 */
export const MAX_DATA_SECONDS = 36_500 * 86_400;

/**
 * The largest payload, in bytes, on every engine: MySQL's MEDIUMBLOB column holds 16 MiB - 1 (and MariaDB
 * stored a longer one cut to its length modulo 2^24, without an error). SQLite could hold more; one limit for
 * all keeps a laptop from accepting what the production database cannot store.
 */
export const MAX_PAYLOAD_COLUMN = 16_777_215;
