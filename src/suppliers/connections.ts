// Keep-alive connections to suppliers: one undici Pool per origin, made the
// same way wherever attempts are made — the dispatcher on the event loop, and
// the pool thread that makes the attempts of surfaces whose replies are
// megabytes (workers/fetch-reply.ts), each with connections of its own.
import { Pool } from 'undici';

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
