// Several gateway instances sharing one PostgreSQL and one Redis, for the
// scale-out tests: the shared Redis (or a private redis-server child for the
// tests that stop it), instances started one after the other, shard owners
// read from Redis, an instance killed whole with SIGKILL, and chat calls that
// report their status and request id.
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';
import type { Test } from 'tap';
import { boundCost } from '../../src/billing/pricing.js';
import { redisPrefix, RedisKeys, shardOf, SHARDS } from '../../src/ledger/redis/keys.js';
import { DEFAULT_CEILING } from '../../src/surfaces/chat/codec.js';
import { startGateway, type Gateway } from '../helpers/gateway.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { ADMIN_TOKEN } from '../helpers/provision.js';
import { ping } from '../helpers/redis-topology.js';
import { startRedisServer, type OwnRedis } from '../helpers/redis-server.js';
import { REDIS_URL } from '../helpers/services.js';
import { connectRedis, isCluster, type RedisLike } from '../../src/ledger/redis/connection.js';

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The shared Redis, or null (the test skipped, or failed under CI=true) when it does not answer. */
export async function sharedRedis(t: Test): Promise<string | null> {
  if (await ping(REDIS_URL)) return REDIS_URL;
  if (process.env.CI === 'true') t.fail(`Redis is not reachable at ${REDIS_URL} (CI=true requires it)`);
  else t.plan(0, `skipped: Redis is not reachable at ${REDIS_URL}; start it to run this test`);
  return null;
}

export type { OwnRedis } from '../helpers/redis-server.js';

/** A redis-server of this test's own (nothing kept on disk), so it can be stopped without touching anyone else's. */
export async function ownRedis(t: Test): Promise<OwnRedis | null> {
  const redis = await startRedisServer();
  if (redis === null) {
    if (process.env.CI === 'true') t.fail('redis-server could not be started (CI=true requires it)');
    else t.plan(0, 'skipped: redis-server could not be started; install it to run this test');
    return null;
  }
  t.teardown(async () => {
    redis.resume();
    await redis.stop();
  });
  return redis;
}

/**
 * Instances one after the other, all stopped at teardown; then the ledger's
 * keys (under the test database's prefix) are removed from the Redis.
 */
export async function startInstances(t: Test, n: number, env: Record<string, string>, workers = 1): Promise<Gateway[]> {
  const out: Gateway[] = [];
  t.teardown(async () => {
    await Promise.all(out.map((gw) => gw.stop()));
    const redis = connectRedis(env.REDIS_URL, { maxRetriesPerRequest: 0, retryStrategy: () => null });
    redis.on('error', () => {});
    // On a Cluster, each primary holds its own slots' keys, and one DEL may name keys of one slot only.
    for (const node of isCluster(redis) ? redis.nodes('master') : [redis]) {
      const keys = await node.keys(`${redisPrefix(env.DATABASE_URL)}*`).catch(() => [] as string[]);
      await Promise.all(keys.map((k) => node.del(k).catch(() => {})));
    }
    redis.disconnect();
  });
  for (let i = 0; i < n; i++) out.push(await startGateway({ env: { ADMIN_TOKEN, LOG_LEVEL: 'info', ...env }, workers }));
  return out;
}

/**
 * A killed instance started again on its data_dir, as an operator's
 * supervisor does: the calls its workers settled that the store had not yet
 * (at most billing.flush_ms of them) are written at its start. Stopped at
 * teardown with `instances` (startInstances's array), which it joins.
 */
export async function restartInstance(instances: Gateway[], dead: Gateway, env: Record<string, string>, workers = 1): Promise<Gateway> {
  const gw = await startGateway({ env: { ADMIN_TOKEN, LOG_LEVEL: 'info', ...env }, workers, dataDir: dead.handOverDataDir(), ownDataDir: true });
  instances.push(gw);
  return gw;
}

export function redisFor(t: Test, url: string): RedisLike {
  const r = connectRedis(url, { maxRetriesPerRequest: 1, retryStrategy: (n) => Math.min(500, n * 50) });
  r.on('error', () => {});
  t.teardown(() => r.disconnect());
  return r;
}

/** Shard number → owning instance id (null: unowned), as the leases in Redis say. */
export async function owners(redis: RedisLike, databaseUrl: string): Promise<Array<string | null>> {
  const keys = new RedisKeys(redisPrefix(databaseUrl), isCluster(redis) ? 'redis-cluster://' : '');
  // A Cluster's leases are in 16 slots: a GET each (MGET names keys of one slot only).
  return Promise.all(Array.from({ length: SHARDS }, (_, i) => redis.get(keys.lease(i))));
}

/** Which of the gateways owns the shard of this organization (instance ids carry the primary's pid). */
export async function ownerOf(redis: RedisLike, databaseUrl: string, orgId: string, gateways: Gateway[]): Promise<Gateway | null> {
  const id = (await owners(redis, databaseUrl))[shardOf(orgId)];
  return gateways.find((g) => id !== null && id.includes(`-${g.proc.pid}-`)) ?? null;
}

/** Waits until every shard is owned and each gateway owns its fair share. */
export async function waitForSpread(redis: RedisLike, databaseUrl: string, gateways: Gateway[], timeoutMs = 15_000): Promise<void> {
  const fair = Math.ceil(SHARDS / gateways.length);
  const until = Date.now() + timeoutMs;
  for (;;) {
    const ids = await owners(redis, databaseUrl);
    const counts = gateways.map((g) => ids.filter((id) => id !== null && id.includes(`-${g.proc.pid}-`)).length);
    if (ids.every((id) => id !== null) && counts.every((c) => c >= fair - 1 && c <= fair)) return;
    if (Date.now() > until) throw new Error(`shards not spread over the instances: ${JSON.stringify(counts)}`);
    await sleep(100);
  }
}

/** SIGKILL to the primary and every process it forked, at once: an instance dying whole. */
export function killInstance(gw: Gateway): void {
  const primary = gw.proc.pid!;
  const children: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === primary) children.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  for (const pid of [primary, ...children]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

export interface CallResult {
  status: number;
  requestId: string | null;
  code: string | null;
  type: string | null;
}

/** One chat call; a connection cut (the instance died) counts as status 0. */
export async function chat(base: string, key: string, content: string, maxTokens?: number): Promise<CallResult> {
  const body = JSON.stringify({ model: 'nw-swift-1', messages: [{ role: 'user', content }], ...(maxTokens ? { max_tokens: maxTokens } : {}) });
  try {
    const res = await fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body });
    const text = await res.text();
    let err: { code?: string; type?: string } = {};
    try {
      err = (JSON.parse(text) as { error?: typeof err }).error ?? {};
    } catch {
      // not JSON
    }
    return { status: res.status, requestId: res.headers.get('x-request-id'), code: err.code ?? null, type: err.type ?? null };
  } catch {
    return { status: 0, requestId: null, code: null, type: null };
  }
}

/**
 * One simulator for every instance of a test (give them `SIMULATOR_URL: sim.url`), stopped at teardown, and
 * a count of the calls whose content it received: a call the supplier has is one its gateway admitted and the
 * caller will be answered for. The money an organization holds is not that: an allotment holds money before any
 * call of it is admitted, and a hold's answer may still be on its way to its caller, which a failover can lose
 * (the call then ends 503, docs/billing.md "Redis Sentinel").
 */
export async function countingSimulator(t: Test, content: string): Promise<{ sim: Simulator; received: () => number }> {
  const sim = await startSimulator({ instances: ['alpha', 'beta', 'gamma'] });
  t.teardown(() => sim.close());
  let received = 0;
  sim.on((e) => {
    if (e.type === 'request' && e.body?.includes(content) === true) received++;
  });
  return { sim, received: () => received };
}

/** The store's word on an organization: balance, the sum of its journal, its usage rows. */
export async function storeMoney(
  databaseUrl: string,
  orgId: string,
): Promise<{ balance: number; journal: number; charged: number; rows: Set<string>; chargedRows: number; charges: number }> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const o = await c.query('SELECT balance_micros FROM organization_money WHERE id = $1', [orgId]);
    const j = await c.query(`SELECT coalesce(sum(amount_micros), 0)::bigint AS s, count(*) FILTER (WHERE kind = 'charge') AS n FROM ledger_entries WHERE org_id = $1`, [orgId]);
    const u = await c.query('SELECT request_id, charged_micros FROM usage_records WHERE org_id = $1', [orgId]);
    return {
      balance: Number(o.rows[0].balance_micros),
      journal: Number(j.rows[0].s),
      charged: u.rows.reduce((s, r) => s + Number(r.charged_micros), 0),
      rows: new Set(u.rows.map((r) => r.request_id as string)),
      chargedRows: u.rows.filter((r) => Number(r.charged_micros) > 0).length,
      charges: Number(j.rows[0].n),
    };
  } finally {
    await c.end();
  }
}

export interface Timed extends CallResult {
  target: number;
  startedAt: number;
  endedAt: number;
}

/** `callers` loops per gateway, each making one call after another, until stop(); answers every call made. */
export function traffic(gateways: Array<{ url: string }>, key: string, content: string, callers: number): { results: Timed[]; stop(): Promise<Timed[]> } {
  const results: Timed[] = [];
  let running = true;
  const loops = gateways.flatMap((gw, target) =>
    Array.from({ length: callers }, async () => {
      while (running) {
        const startedAt = Date.now();
        const r = await chat(gw.url, key, content, 64);
        results.push({ ...r, target, startedAt, endedAt: Date.now() });
        if (r.status !== 200) await sleep(r.status === 0 ? 50 : 10); // refused or gone: do not spin
      }
    }),
  );
  return {
    results,
    async stop() {
      running = false;
      await Promise.all(loops);
      return results;
    },
  };
}

/** Polls until `probe` answers true, or fails with `what`. */
export async function eventually(what: string, probe: () => Promise<boolean>, timeoutMs = 15_000): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await probe().catch(() => false)) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await sleep(100);
  }
}

/** nw-swift-1's prices, as the catalog seeds them. */
const SWIFT = { inputPerMtok: 150000, cachedInputPerMtok: 75000, outputPerMtok: 600000, imageUnit: 0 };

/**
 * Funding for exactly K maximum-bound chat calls of this content: one micro
 * short of a (K+1)th hold, even of its counted estimate (docs/billing.md),
 * i.e. less than its output bound alone. `bound`: one call's hold.
 */
export function fundedForK(content: string, k: number): { bound: number; credits: number } {
  const body = JSON.stringify({ model: 'nw-swift-1', messages: [{ role: 'user', content }] });
  const bound = boundCost(SWIFT, { inputTokens: Buffer.byteLength(body), outputTokens: DEFAULT_CEILING, imageUnits: 0 });
  return { bound, credits: k * bound + boundCost(SWIFT, { inputTokens: 0, outputTokens: DEFAULT_CEILING, imageUnits: 0 }) - 1 };
}
