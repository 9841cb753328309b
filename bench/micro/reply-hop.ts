// What a reply decoded in the pool costs the main thread, for the reply
// micro-benchmarks (embeddings-reply.ts, image-reply.ts): the surface's
// decodeReply in a thread (workers/decode-reply.ts), then its render here.
// Main-thread time is read from event-loop utilization, which counts only
// this thread; process CPU counts every thread, the pool's too.
import { performance } from 'node:perf_hooks';
import type { Metered } from '../../src/billing/types.js';
import type { OffloadPool } from '../../src/offload/pool.js';
import { modelCallNamed } from '../../src/surfaces/index.js';
import type { CallInfo, RequestFacts } from '../../src/surfaces/surface.js';

export interface ReplyCase {
  /** The surface's registry name. */
  surface: string;
  call: CallInfo;
  meta: RequestFacts;
  settled: Metered;
}

/** Main-thread µs per reply decoded and rendered inline, as pipeline/answer-unary.ts does at or below the threshold. */
export function inlineMicros(c: ReplyCase, text: string, n: number): number {
  const surface = modelCallNamed(c.surface);
  const start = performance.now();
  for (let i = 0; i < n; i++) surface.render(surface.decodeReply(JSON.parse(text), c.meta), c.call, c.settled);
  return ((performance.now() - start) * 1000) / n;
}

/** [main-thread µs, all-threads µs] per reply through the pool, `inFlight` at a time. */
export async function pooledMicros(pool: OffloadPool, c: ReplyCase, text: string, n: number, inFlight: number): Promise<[number, number]> {
  const surface = modelCallNamed(c.surface);
  const elu0 = performance.eventLoopUtilization();
  const cpu0 = process.cpuUsage();
  let next = 0;
  const lane = async () => {
    while (next++ < n) {
      // A fresh buffer per reply, as each supplier reply is: the pool moves it.
      const r = await pool.decodeReply(c.surface, Buffer.from(text), c.meta);
      if (!r.ok) throw new Error('decode failed');
      surface.render(r.decoded, c.call, c.settled);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  const cpu = process.cpuUsage(cpu0);
  return [(performance.eventLoopUtilization(elu0).active * 1000) / n, (cpu.user + cpu.system) / n];
}
