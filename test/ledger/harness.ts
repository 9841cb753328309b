// The test side of test/fixtures/ledger-harness.ts: forks the harness (a real
// cluster primary with real workers) with tap's TypeScript loader and sends
// it operations.
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import type { Test } from 'tap';
import { packageRoot } from '../../src/config/paths.js';
import { redisPrefix } from '../../src/ledger/redis/keys.js';
import { sharedRedis } from '../e2e/scale-out-helpers.js';
import { testDatabase } from '../helpers/services.js';
import type { ReserveArgs, ReserveResult, SettleArgs } from '../fixtures/ledger-harness.js';

export type { ReserveArgs, ReserveResult, SettleArgs };

export interface HarnessOptions {
  /** 'embedded' (a PostgreSQL started on a temporary directory) or a postgres:// URL. */
  store: string;
  workers: number;
  env?: Record<string, string>;
}

export interface Harness {
  pids: number[];
  call<T = unknown>(op: string, args?: unknown): Promise<T>;
  worker<T = unknown>(index: number, op: string, args?: unknown): Promise<T>;
  close(): Promise<void>;
}

export async function startHarness(t: Test, opts: HarnessOptions): Promise<Harness> {
  // Only tap's TypeScript loader: the harness and its workers run the sources as the tests do.
  const execArgv = process.execArgv.filter((a) => a.includes('@tapjs/typescript'));
  const env: Record<string, string> = { ...(process.env as Record<string, string>), HARNESS: JSON.stringify(opts) };
  delete env.NODE_OPTIONS;
  delete env.DATABASE_URL;
  const child: ChildProcess = fork(join(packageRoot, 'test/fixtures/ledger-harness.ts'), [], { execArgv, env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waiting = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  let seq = 0;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const pids = await new Promise<number[]>((resolve, reject) => {
    child.on('message', (m: any) => {
      if (m.ready) return resolve(m.pids);
      const w = waiting.get(m.id);
      if (w === undefined) return;
      waiting.delete(m.id);
      if (m.error !== undefined) w.reject(new Error(m.error));
      else w.resolve(m.result);
    });
    child.once('exit', (code) => {
      reject(new Error(`harness exited (${code}) before it was ready`));
      for (const w of waiting.values()) w.reject(new Error('harness exited'));
    });
  });
  const call = <T>(op: string, args?: unknown): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = ++seq;
      waiting.set(id, { resolve, reject });
      child.send({ id, op, args });
    });
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    await call('close').catch(() => {});
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  t.teardown(close);
  return { pids, call, worker: (index, op, args) => call('worker', { index, op, args }), close };
}

/**
 * The harness with the ledger on the Redis host: the shared redis-server and
 * the test PostgreSQL, this deployment's keys deleted afterwards. Null (the
 * reason printed) when either is not there.
 */
export async function startRedisHarness(t: Test, opts: { workers: number; env?: Record<string, string> }): Promise<Harness | null> {
  const redisUrl = await sharedRedis(t);
  const db = redisUrl === null ? null : await testDatabase(t);
  if (redisUrl === null || db === null) return null;
  const h = await startHarness(t, { store: db, workers: opts.workers, env: { REDIS_URL: redisUrl, ...opts.env } });
  t.teardown(async () => {
    await h.close();
    const redis = new Redis(redisUrl);
    const keys = await redis.keys(`${redisPrefix(db)}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });
  return h;
}

/** An organization's money as the store holds it, once worker 0 has synced the ledger: the balance, the sum of its journal, the sum charged in its usage rows and their count. */
export async function books(h: Harness, orgId: string): Promise<{ balance: number; journal: number; charged: number; rows: number }> {
  await h.worker(0, 'sync');
  const [o] = await h.call<Array<{ b: string }>>('sql', { text: 'SELECT balance_micros AS b FROM organization_money WHERE id = $1', params: [orgId] });
  const [j] = await h.call<Array<{ s: string }>>('sql', { text: 'SELECT coalesce(sum(amount_micros), 0) AS s FROM ledger_entries WHERE org_id = $1', params: [orgId] });
  const [u] = await h.call<Array<{ s: string; n: string }>>('sql', { text: 'SELECT coalesce(sum(charged_micros), 0) AS s, count(*) AS n FROM usage_records WHERE org_id = $1', params: [orgId] });
  return { balance: Number(o.b), journal: Number(j.s), charged: Number(u.s), rows: Number(u.n) };
}

/** Settles the list (SettleArgs each) from two workers at once, alternately. */
export async function settleOnBoth(h: Harness, list: readonly object[]): Promise<void> {
  await Promise.all([h.worker(0, 'settleMany', { list: list.filter((_, i) => i % 2 === 0) }), h.worker(1, 'settleMany', { list: list.filter((_, i) => i % 2 === 1) })]);
}
