// The channels a worker's answers (and its allotments' recalls) come on, on
// either kind of Redis. One server (or Sentinel's primary): classic pub/sub,
// one channel per worker. A Redis Cluster: sharded pub/sub (Redis ≥ 7), one
// channel per worker and shard, in the shard's slot (keys.ts): a classic
// PUBLISH there would be copied to every node of the cluster, while SPUBLISH
// stays on the slot's primary and its replicas, and can go in the same
// pipeline as the shard's other writes (outbox.ts), so its order after them
// holds as on one server.
import type { ChainableCommander } from 'ioredis';
import { isCluster, type RedisLike } from './connection.js';

/** Subscribes to `channels`, handing each message's text to `onText`; resolves once every subscription is made. */
export async function listenForReplies(conn: RedisLike, channels: string[], onText: (text: string) => void): Promise<void> {
  if (!isCluster(conn)) {
    conn.on('message', (_channel: string, text: string) => onText(text));
    await conn.subscribe(...channels);
    return;
  }
  conn.on('smessage', (_channel: string, text: string) => onText(text));
  // One SSUBSCRIBE per slot: a command's channels must all hash to one slot.
  await Promise.all(channels.map((c) => conn.ssubscribe(c)));
}

/** Queues the message on `channel` in a pipeline (or a MULTI) of the shard's writes. */
export function publishIn(pipeline: ChainableCommander, cluster: boolean, channel: string, text: string): void {
  if (cluster) pipeline.spublish(channel, text);
  else pipeline.publish(channel, text);
}
