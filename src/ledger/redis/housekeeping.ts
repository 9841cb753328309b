// Keeping a shard stream small: entries every consumer is done with are
// trimmed (never one still pending or not yet delivered, so nothing waiting
// to be applied or written is lost), and consumers of instances long gone
// are removed from the group once nothing is pending for them.
import type { RedisLike } from './connection.js';
import { GROUP } from './keys.js';

/** A consumer idle this long with nothing pending is an instance that has gone away. */
const CONSUMER_GONE_MS = 10 * 60_000;

/** Flat [name, value, name, value, ...] replies (XINFO) as a record. */
function record(flat: unknown[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = flat[i + 1];
  return out;
}

function olderId(a: string, b: string): string {
  const [am, as] = a.split('-').map(Number);
  const [bm, bs] = b.split('-').map(Number);
  return am < bm || (am === bm && as <= bs) ? a : b;
}

export async function housekeeping(redis: RedisLike, stream: string, me: string): Promise<void> {
  const groups = ((await redis.xinfo('GROUPS', stream)) as unknown[][]).map(record);
  const group = groups.find((g) => g.name === GROUP);
  if (group === undefined) return;
  let keep = String(group['last-delivered-id']);
  const summary = (await redis.xpending(stream, GROUP)) as [number, string | null, string | null, unknown];
  if (Number(summary[0]) > 0 && summary[1] !== null) keep = olderId(summary[1], keep);
  if (keep !== '0-0') await redis.xtrim(stream, 'MINID', '~', keep);
  const consumers = ((await redis.xinfo('CONSUMERS', stream, GROUP)) as unknown[][]).map(record);
  for (const c of consumers) {
    if (c.name !== me && Number(c.pending) === 0 && Number(c.idle) > CONSUMER_GONE_MS) await redis.xgroup('DELCONSUMER', stream, GROUP, String(c.name));
  }
}
