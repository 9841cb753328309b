// Change bus over PostgreSQL LISTEN/NOTIFY: reaches every process of every
// instance sharing the database. One dedicated connection per process listens
// and reconnects after a loss (the consumers' polling covers the gap).
import pg from 'pg';
import type { Logger } from '../log/logger.js';
import type { Pool } from '../store/pool.js';
import { Subscribers, type ChangeBus, type ChangeHandler, type Topic } from './bus.js';

/** Also named by the store's trigger on the key change log (store/migrations/011-key-change-notify.ts). */
export const CHANNEL = 'tollgate_changes';

export class PgBus implements ChangeBus {
  private readonly subs = new Subscribers();
  private client: pg.Client | null = null;
  private closed = false;
  private retry: NodeJS.Timeout | null = null;
  private readonly watchers: Array<(listening: boolean) => void> = [];

  constructor(
    private readonly url: string,
    private readonly pool: Pool,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 3000 });
    client.on('notification', (n) => {
      const text = n.payload ?? '';
      const cut = text.indexOf(':');
      if (cut > 0) this.subs.deliver(text.slice(0, cut) as Topic, text.slice(cut + 1));
    });
    // Only the connection in use (or being opened) decides: a replaced one's late events are no news.
    const lost = (): void => {
      if (this.client === null || this.client === client) this.reconnectLater();
    };
    client.on('error', lost);
    client.on('end', lost);
    await client.connect();
    await client.query(`LISTEN ${CHANNEL}`);
    this.client = client;
    for (const w of this.watchers) w(true);
  }

  watch(handler: (listening: boolean) => void): void {
    this.watchers.push(handler);
    handler(this.client !== null);
  }

  private reconnectLater(): void {
    if (this.closed || this.retry !== null) return;
    const wasListening = this.client !== null;
    this.client = null;
    if (wasListening) for (const w of this.watchers) w(false);
    this.retry = setTimeout(() => {
      this.retry = null;
      this.start().catch((err: Error) => {
        this.logger.warn({ err: err.message }, 'change bus: LISTEN connection failed; retrying');
        this.reconnectLater();
      });
    }, 1000);
    this.retry.unref();
  }

  async publish(topic: Topic, payload: string): Promise<void> {
    await this.pool.query('SELECT pg_notify($1, $2)', [CHANNEL, `${topic}:${payload}`]);
  }

  subscribe(topic: Topic, handler: ChangeHandler): void {
    this.subs.add(topic, handler);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry !== null) clearTimeout(this.retry);
    const c = this.client;
    this.client = null;
    if (c !== null) await c.end().catch(() => {});
  }
}
