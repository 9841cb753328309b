// Real services for tests: PostgreSQL and Redis on loopback. Without them a
// test skips with the reason printed; under CI=true a missing service fails.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Test } from 'tap';

export const PG_ADMIN_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const inCI = process.env.CI === 'true';

async function postgresUp(): Promise<boolean> {
  const c = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 2000 });
  try {
    await c.connect();
    await c.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await c.end().catch(() => {});
  }
}

/** A fresh database on the real server, dropped when the test ends. Null (and the test skipped) when there is no server. */
export async function testDatabase(t: Test): Promise<string | null> {
  if (!(await postgresUp())) {
    if (inCI) t.fail(`PostgreSQL is not reachable at ${PG_ADMIN_URL} (CI=true requires it)`);
    else t.plan(0, `skipped: PostgreSQL is not reachable at ${PG_ADMIN_URL}; start it to run this test`);
    return null;
  }
  const name = 'tg_test_' + randomBytes(6).toString('hex');
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  t.teardown(async () => {
    const c = new pg.Client({ connectionString: PG_ADMIN_URL });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.end();
  });
  const url = new URL(PG_ADMIN_URL);
  url.pathname = '/' + name;
  return url.toString();
}
