// ioredis connections for the ledger, tuned to fail fast: a command issued
// while Redis is unreachable is refused at once (no offline queue), so a model
// call answers 503 instead of waiting, and the client reconnects by itself
// (at most a second apart) so service resumes when Redis returns.
//
// The URL names one Redis server (redis://, rediss://), a Redis Sentinel
// deployment (redis-sentinel://) or a Redis Cluster (redis-cluster://).
// ioredis's own Sentinel support asks the sentinels for the primary, follows
// a failover (the old primary's connection drops, the client asks the
// sentinels again and reconnects to the promoted replica), and refuses a
// server that has become a replica. Its own Cluster client reads the slot map
// from the seed nodes, sends each command to the primary of its key's slot,
// and follows a failover by reading the map again (MOVED, or a node's
// connection dropping).
import { createHash } from 'node:crypto';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { Logger } from '../../log/logger.js';
import { parseClusterUrl } from '../../config/cluster-url.js';
import { parseSentinelUrl } from '../../config/sentinel-url.js';

/** A ledger connection: one server (or Sentinel's primary), or a whole Redis Cluster. */
export type RedisLike = Redis | Cluster;

export function isClusterUrl(url: string): boolean {
  return url.startsWith('redis-cluster://');
}

export function isCluster(redis: RedisLike): redis is Cluster {
  return redis instanceof Cluster;
}

export type Role = 'commands' | 'reader' | 'replies';

/** Reconnect quickly at first, then once a second: recovery within about a second of Redis returning. */
const retryStrategy = (times: number): number => Math.min(1000, 50 * times);

/**
 * `redis-sentinel://[[user]:password@]host:port[,host:port…]/<master name>[?sentinel_password=…]`
 * (parsed in config/sentinel-url.ts, which the config check shares) as ioredis's
 * Sentinel options.
 */
export function sentinelOptions(url: string): RedisOptions {
  const { sentinels, name, username, password, sentinelPassword } = parseSentinelUrl(url);
  return {
    sentinels,
    name,
    username,
    password,
    sentinelPassword,
    // No sentinel answers: ask them all again, at most a second apart (a sentinel that does not answer is skipped at once).
    sentinelRetryStrategy: (times: number) => Math.min(1000, 50 * times),
    // A primary demoted to a replica (a failover it missed) answers READONLY: reconnect and ask the sentinels again.
    reconnectOnError: (err: Error) => err.message.startsWith('READONLY'),
    // No failover detector. In ioredis 6.0 the detector of a connection that dropped stays subscribed while the client
    // reconnects; the promotion's +switch-master then cuts the attempt under way, and an attempt cut while it asks a
    // sentinel ends the client for good ('Connection is closed.' to every command, no reconnect). Seen in the Sentinel
    // failover test on a loaded machine: no call answered 15 s after the promotion, shards failing to start with that
    // error. A killed primary drops its connections anyway, and a demoted one answers READONLY (above).
    failoverDetector: false,
  };
}

/**
 * `redis-cluster://[[user]:password@]host:port[,host:port…]` as ioredis's
 * Cluster options; `node`: the options of each node's connection.
 * `subscriber`: a connection whose sharded subscriptions (SSUBSCRIBE) go to
 * the primary of each channel's slot, and follow it through a failover.
 */
export function clusterOptions(url: string, node: RedisOptions, subscriber = false): ClusterOptions {
  const { username, password } = parseClusterUrl(url);
  const { enableOfflineQueue, enableAutoPipelining, retryStrategy, ...perNode } = node;
  return {
    redisOptions: { ...perNode, username, password },
    // Writes and reads both go to the slot's primary: a replica may lag, and the ledger reads what it just wrote.
    scaleReads: 'master',
    enableOfflineQueue,
    enableAutoPipelining,
    // The whole cluster unreachable: try again, at most a second apart (as a single server's connection does).
    clusterRetryStrategy: retryStrategy === undefined ? undefined : (times: number) => Math.min(1000, 50 * times),
    // A primary gone: its slots are served again once a replica is promoted (cluster-node-timeout plus an
    // election, seconds). Until then a command for them is retried a few times, then refused: the caller
    // answers 503 (or writes a settlement to the store), as with a single server down.
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    maxRedirections: 8,
    // The slot map read again every second: a promotion is followed even where no command met the old primary.
    slotsRefreshInterval: 1000,
    slotsRefreshTimeout: 1000,
    shardedSubscribers: subscriber,
  };
}

/** A client for the URL (one server, the primary that Sentinel names, or a Redis Cluster), with these options. */
export function connectRedis(url: string, options: RedisOptions = {}, subscriber = false): RedisLike {
  if (isClusterUrl(url)) return new Cluster(parseClusterUrl(url).nodes, clusterOptions(url, options, subscriber));
  if (url.startsWith('redis-sentinel://')) return new Redis({ ...sentinelOptions(url), ...options });
  return new Redis(url, options);
}

/**
 * Calls `lost` when one of a Cluster's nodes drops its connection (a primary
 * killed, say), which the Cluster client as a whole does not report: it stays
 * ready while its other primaries answer. A single server's connection says
 * so by its own 'close' and 'ready'; nothing to add there.
 */
export function onNodeLost(redis: RedisLike, lost: () => void): void {
  if (!isCluster(redis)) return;
  let last = 0;
  redis.on('node error', () => {
    // A dead node is retried many times a second: once per second is enough to say it.
    if (Date.now() - last < 1000) return;
    last = Date.now();
    lost();
  });
}

export function redisConnection(url: string, role: Role, name: string, logger: Logger): RedisLike {
  const redis = connectRedis(
    url,
    {
    connectionName: name,
    connectTimeout: 2000,
    retryStrategy,
    maxRetriesPerRequest: 1,
    // Subscriptions are made once and must survive reconnects; everything else fails fast.
    enableOfflineQueue: role === 'replies',
    autoResubscribe: true,
    // Many callers in one tick (a worker's concurrent reservations) share one write.
    enableAutoPipelining: role === 'commands',
    // A blocked read has no deadline of its own; the others must not hang on a stalled server.
    commandTimeout: role === 'reader' ? undefined : 2000,
    },
    role === 'replies',
  );
  let down = false;
  redis.on('error', (err: Error) => {
    if (down) return;
    down = true;
    logger.warn({ redis: name, err: err.message }, 'ledger: Redis connection lost; retrying');
  });
  redis.on('ready', () => {
    if (!down) return;
    down = false;
    logger.info({ redis: name }, 'ledger: Redis connection restored');
  });
  return redis;
}

/** Runs a Lua script by its hash, loading it on first use (or after Redis restarted empty). */
export class Script {
  private sha: string | null = null;

  private readonly hash: string;

  constructor(private readonly source: string) {
    this.hash = createHash('sha1').update(source).digest('hex');
  }

  async run(redis: RedisLike, keys: string[], args: Array<string | number>): Promise<unknown> {
    // In a Cluster, SCRIPT LOAD would reach one node, not necessarily the one of the keys' slot: EVAL there instead,
    // which also caches the script on that node (and on a replica promoted since, which has not seen it).
    if (isCluster(redis)) {
      try {
        return await redis.evalsha(this.hash, keys.length, ...keys, ...args);
      } catch (err) {
        if (!String((err as Error).message).startsWith('NOSCRIPT')) throw err;
        return redis.eval(this.source, keys.length, ...keys, ...args);
      }
    }
    if (this.sha !== null) {
      try {
        return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
      } catch (err) {
        if (!String((err as Error).message).startsWith('NOSCRIPT')) throw err;
      }
    }
    this.sha = (await redis.script('LOAD', this.source)) as string;
    return redis.evalsha(this.sha, keys.length, ...keys, ...args);
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
