// The one SQL code path: a pg Pool, whether the server is an external
// PostgreSQL (DATABASE_URL) or the embedded one the primary starts.
import pg from 'pg';
import { copyIn } from './copy-in.js';

// int8 columns hold money in micros and counters, kept within 2^53 (money/money.ts MAX_MICROS); a value past it fails its query instead of rounding.
pg.types.setTypeParser(20, (v) => { const n = Number(v); if (Number.isSafeInteger(n)) return n; throw new RangeError(`int8 ${v} is not exact as a number`); });
// A `date` is a calendar day, not an instant: keep 'yyyy-mm-dd'.
pg.types.setTypeParser(1082, (v) => v);

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

export function createPool(connectionString: string, max: number): pg.Pool {
  const pool = new pg.Pool({
    connectionString,
    max,
    connectionTimeoutMillis: 3000,
    query_timeout: 10_000,
    idleTimeoutMillis: 30_000,
    allowExitOnIdle: true,
  });
  // An idle client losing its server emits here; without a listener it would crash the process.
  pool.on('error', () => {});
  // A client checked out (a transaction, a catalog load, the journal's COPY) has no pool listener: pg-pool removes
  // it while the client is lent. A reset connection then emits 'error' on the client itself, and an 'error' event
  // nobody listens to exits the process (issue 39: the primary died of a PostgreSQL reset). Its queries are failed
  // with the same error, which is how the borrower learns of it; the pool drops the client when it comes back.
  pool.on('connect', (client) => client.on('error', ignoreClientError));
  return pool;
}

/** The error also fails the client's queries (their callers answer for it): nothing more to do here. */
function ignoreClientError(): void {}

/** A sound connection rolls back in milliseconds; one that does not answer by then is not waited on. */
const ROLLBACK_TIMEOUT_MS = 1000;

/**
 * Runs `fn` inside one transaction on one client. On failure the transaction
 * is rolled back; a client that cannot roll back (its connection lost, or
 * still held by a query that timed out unanswered: the ROLLBACK would only
 * queue behind it) is dropped from the pool, never given to the next caller.
 */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const out = await fn(client);
    await client.query('COMMIT');
    return out;
  } catch (err) {
    await client.query({ text: 'ROLLBACK', query_timeout: ROLLBACK_TIMEOUT_MS } as pg.QueryConfig).catch((e: Error) => (broken = e));
    throw err;
  } finally {
    client.release(broken);
  }
}

/**
 * Runs `text` as copyIn does (its COPY … FROM STDIN statements taking
 * `chunks`), on a client of its own: one query for all its statements (the
 * query, then each COPY's data: two exchanges for one COPY), and one
 * transaction (a simple query's statements are one unless they say
 * otherwise), which the server rolls back whole when a statement fails. A
 * client whose server did not answer (its connection lost, or a timeout: the
 * query may still run there) is dropped from the pool, as inTransaction's.
 */
export async function copyInOnce(pool: pg.Pool, text: string, chunks: readonly Buffer[]): Promise<void> {
  const client = await pool.connect();
  let unanswered: Error | undefined;
  try {
    await copyIn(client, text, chunks);
  } catch (err) {
    if (!(err instanceof pg.DatabaseError)) unanswered = err as Error;
    throw err;
  } finally {
    client.release(unanswered);
  }
}
