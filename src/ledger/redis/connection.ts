// ioredis connections for the ledger, tuned to fail fast: a command issued
// while Redis is unreachable is refused at once (no offline queue), so a model
// call answers 503 instead of waiting, and the client reconnects by itself
// (at most a second apart) so service resumes when Redis returns.
import { Redis } from 'ioredis';
import type { Logger } from '../../log/logger.js';

export type Role = 'commands' | 'reader' | 'replies';

/** Reconnect quickly at first, then once a second: recovery within about a second of Redis returning. */
const retryStrategy = (times: number): number => Math.min(1000, 50 * times);

export function redisConnection(url: string, role: Role, name: string, logger: Logger): Redis {
  const redis = new Redis(url, {
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
  });
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

  constructor(private readonly source: string) {}

  async run(redis: Redis, keys: string[], args: Array<string | number>): Promise<unknown> {
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
