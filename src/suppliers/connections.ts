// Keep-alive connections to suppliers: one undici Pool per origin, made the
// same way wherever attempts are made — the dispatcher on the event loop, and
// the pool thread that makes the attempts of surfaces whose replies are
// megabytes (workers/fetch-reply.ts), each with connections of its own. An
// attempt is one dispatch with a ReplyBody as its handler (reply-body.ts),
// never undici's request(), whose stream and signal cost more than the rest.
import { Pool } from 'undici';
import type { CallAbort } from './abort.js';
import { ReplyBody, type ReplyHead } from './reply-body.js';
import type { Target } from './targets.js';

export interface ConnectionSettings {
  connectTimeoutMs: number;
  /** Unary replies arrive whole after generation: this bounds the wait for headers. */
  headersTimeoutMs: number;
  /** Longest silence between two body chunks. */
  bodyTimeoutMs: number;
  connectionsPerOrigin: number;
}

export class SupplierConnections {
  private readonly pools = new Map<string, Pool>();

  constructor(private readonly settings: ConnectionSettings) {}

  /** One POST of `body` to the target; resolves with the reply's head (a connect error or timeout rejects). */
  /** `traceparent`: a traced attempt's W3C trace context, sent besides the route's fixed headers. */
  send(target: Target, body: string, abort: CallAbort, traceparent: string | null = null): Promise<ReplyHead> {
    const reply = new ReplyBody(abort);
    const headers = traceparent === null ? target.headers : { ...target.headers, traceparent };
    this.to(target.origin).dispatch({ method: 'POST', path: target.path, headers, body }, reply);
    return reply.head;
  }

  /** The origin's pool, made on first use. */
  to(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (pool === undefined) {
      pool = new Pool(origin, {
        connections: this.settings.connectionsPerOrigin,
        keepAliveTimeout: 30_000,
        connect: { timeout: this.settings.connectTimeoutMs },
        headersTimeout: this.settings.headersTimeoutMs,
        bodyTimeout: this.settings.bodyTimeoutMs,
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((p) => p.close().catch(() => {})));
    this.pools.clear();
  }
}
