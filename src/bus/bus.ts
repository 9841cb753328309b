// Change notifications between processes and instances: "the catalog has a
// new revision", "this key changed". One interface; its transport is
// PostgreSQL LISTEN/NOTIFY (pg-bus.ts), embedded default and DATABASE_URL
// alike. Every consumer also polls, so a lost notification only delays a
// change, never loses it; a consumer that polls slowly while notifications
// reach it (key-sync.ts) watches whether they can.

export type Topic = 'catalog' | 'keys' | 'orgs';

export type ChangeHandler = (payload: string) => void;

export interface ChangeBus {
  /** Delivers to every subscriber of every process, this one included. */
  publish(topic: Topic, payload: string): Promise<void>;
  subscribe(topic: Topic, handler: ChangeHandler): void;
  /**
   * Told false when this process stops listening (its connection lost) and
   * true when it listens again: what was announced in between was missed.
   * Optional: a bus that cannot say is taken as never listening.
   */
  watch?(handler: (listening: boolean) => void): void;
  close(): Promise<void>;
}

/** Local fan-out shared by the transports. */
export class Subscribers {
  private readonly handlers = new Map<Topic, ChangeHandler[]>();

  add(topic: Topic, handler: ChangeHandler): void {
    const list = this.handlers.get(topic) ?? [];
    list.push(handler);
    this.handlers.set(topic, list);
  }

  deliver(topic: Topic, payload: string): void {
    for (const h of this.handlers.get(topic) ?? []) h(payload);
  }
}
