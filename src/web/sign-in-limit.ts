// Sign-in attempts are limited per account and per client address: after
// web.sign_in_max_failures refused tries within web.sign_in_window_ms, every
// further try on that account or from that address is refused with 429
// (without checking the password) until the window moves on. Failures are
// rows in the store, so the limit holds across workers and instances.
import type { Pool } from '../store/pool.js';

export interface SignInLimit {
  maxFailures: number;
  windowMs: number;
}

export async function blocked(pool: Pool, limit: SignInLimit, buckets: string[]): Promise<boolean> {
  const { rows } = await pool.query(
    `SELECT bucket, count(*)::int AS n FROM console_sign_in_failures
      WHERE bucket = ANY($1) AND at > now() - make_interval(secs => $2::float8 / 1000) GROUP BY bucket`,
    [buckets, limit.windowMs],
  );
  return rows.some((r) => r.n >= limit.maxFailures);
}

export async function recordFailure(pool: Pool, limit: SignInLimit, buckets: string[]): Promise<void> {
  await pool.query('INSERT INTO console_sign_in_failures (bucket) SELECT unnest($1::text[])', [buckets]);
  // Keep the table small: rows older than the window count for nothing.
  await pool.query('DELETE FROM console_sign_in_failures WHERE bucket = ANY($1) AND at < now() - make_interval(secs => $2::float8 / 1000)', [buckets, limit.windowMs]);
}
