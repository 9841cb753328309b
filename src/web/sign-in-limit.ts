// Sign-in attempts are limited per account and client address together
// (`acct:<email>|<address>`, or `operator|<address>` for the admin token), and
// per address alone at ADDRESS_FACTOR times that: after
// web.sign_in_max_failures tries within web.sign_in_window_ms, the next try on
// that pair is refused with 429 without checking anything, until the window
// moves on. So a person signing in from elsewhere is never locked out by
// someone guessing their password (issue 30 item 6), and one address cannot
// spray guesses over many accounts.
//
// An attempt is counted before its credential is checked (issue 30 item 1):
// under a per-bucket advisory lock, in one short transaction, the buckets are
// counted and, when none is full, the attempt is written to each. Concurrent
// tries on one bucket (from any worker or instance: the lock and the rows are
// PostgreSQL's) are thus serialized at this step, and at most the limit of
// them go on to the password check; the rest are refused. An attempt whose
// credential was right is then removed (`forgive`): only failures, and
// attempts still being checked, fill a bucket. Within a worker an address's
// tries are counted one after another in memory first, so a burst from one
// address waits without holding the worker's pooled connections (only
// workers and instances contend for the lock).
import { limitKey } from '../config/client-address.js';
import { inTransaction, type Pool } from '../store/pool.js';

export interface SignInLimit {
  maxFailures: number;
  windowMs: number;
}

/** An address alone may fail this many times the per-account limit (over several accounts) before it is refused. */
export const ADDRESS_FACTOR = 4;

/** First key of the two-int advisory locks taken here, so they share no key with any other lock. */
const LOCK_SPACE = 0x7467_7369; // 'tgsi'

export interface Attempt {
  buckets: string[];
  /** When it was written, as PostgreSQL's text (microseconds, which a JS Date would lose; unique within a bucket, whose writes are serialized). */
  at: string;
}

/** `address` as canonicalIp writes it; an IPv6 client counts under its /64. */
export function signInBuckets(ip: string, account: string | null): Array<{ bucket: string; factor: number }> {
  const address = limitKey(ip);
  return [
    { bucket: (account === null ? 'operator' : 'acct:' + account.toLowerCase()) + '|' + address, factor: 1 },
    { bucket: 'ip:' + address, factor: ADDRESS_FACTOR },
  ];
}

/** Per address, the tail of this worker's queue of tries being counted. */
const counting = new Map<string, Promise<unknown>>();

function oneAtATime<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const run = (counting.get(key) ?? Promise.resolve()).then(fn, fn);
  const tail = run.catch(() => {});
  counting.set(key, tail);
  void tail.then(() => {
    if (counting.get(key) === tail) counting.delete(key);
  });
  return run;
}

/**
 * Counts one attempt on every bucket, or returns null, writing nothing, when
 * any bucket already holds its limit (refuse with 429, check nothing).
 */
export function beginAttempt(pool: Pool, limit: SignInLimit, address: string, account: string | null): Promise<Attempt | null> {
  return oneAtATime(limitKey(address), () => countAttempt(pool, limit, address, account));
}

/** beginAttempt without this worker's queue: the advisory lock alone keeps it atomic (so tests can race it). */
export async function countAttempt(pool: Pool, limit: SignInLimit, address: string, account: string | null): Promise<Attempt | null> {
  const wanted = signInBuckets(address, account);
  const buckets = wanted.map((w) => w.bucket);
  const attempt = await inTransaction(pool, async (c) => {
    // One lock per bucket, always taken in the same order, so two attempts never wait on each other in a cycle.
    for (const b of [...buckets].sort()) await c.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2))', [LOCK_SPACE, b]);
    const { rows } = await c.query<{ bucket: string; n: number }>(
      `SELECT bucket, count(*)::int AS n FROM console_sign_in_failures
        WHERE bucket = ANY($1) AND at > now() - make_interval(secs => $2::float8 / 1000) GROUP BY bucket`,
      [buckets, limit.windowMs],
    );
    const full = rows.some((r) => r.n >= limit.maxFailures * wanted.find((w) => w.bucket === r.bucket)!.factor);
    if (full) return null;
    const written = await c.query<{ at: string }>(
      'INSERT INTO console_sign_in_failures (bucket, at) SELECT b, t.at FROM unnest($1::text[]) b, (SELECT clock_timestamp() AS at) t RETURNING at::text AS at',
      [buckets],
    );
    return { buckets, at: written.rows[0].at };
  });
  // Keep the table small: rows older than the window count for nothing.
  await pool.query('DELETE FROM console_sign_in_failures WHERE bucket = ANY($1) AND at < now() - make_interval(secs => $2::float8 / 1000)', [buckets, limit.windowMs]);
  return attempt;
}

/** The attempt's credential was right: it is no failure, and counts against nothing. */
export async function forgive(pool: Pool, attempt: Attempt): Promise<void> {
  await pool.query('DELETE FROM console_sign_in_failures WHERE bucket = ANY($1) AND at = $2::timestamptz', [attempt.buckets, attempt.at]);
}
