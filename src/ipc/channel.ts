// Request/response and one-way messages between the cluster primary and its
// workers, over Node's cluster IPC channel. Used for change notifications,
// metrics collection and (in the embedded default) the ledger actors.
//
// Messages to one peer are batched per event-loop turn: every envelope queued
// while this turn's I/O callbacks run goes out as one process.send in the
// check phase (setImmediate), so under load a reservation costs a share of a
// pipe write and of the peer's wake-up instead of one each; a lone message
// leaves in the same turn, so one call at a time waits no longer.
import cluster, { type Worker } from 'node:cluster';

type Handler = (payload: any, from: Worker | null) => unknown;

interface Envelope {
  tg: 1;
  t?: string; // message type (requests and one-way messages)
  id?: number; // set when a reply is expected
  re?: number; // set on replies
  p?: unknown;
  e?: string; // error text on a failed reply
  b?: Envelope[]; // a batch: these envelopes, in order
}

/** Envelopes for one peer, sent together once this event-loop turn's callbacks have run. */
class Outbox {
  private queue: Envelope[] = [];
  private scheduled = false;
  /** Told once the queue they were waiting with has been written (or lost with a closed channel). */
  private waiters: Array<() => void> = [];

  constructor(
    private readonly open: () => boolean,
    /** Sends one envelope; `sent` is called once it has left this process (written to the pipe), or failed to. */
    private readonly write: (m: Envelope, sent: () => void) => void,
    private readonly lost: (queued: Envelope[]) => void,
  ) {}

  /** False only when the channel is closed; a full backlog still queues the message. */
  post(m: Envelope): boolean {
    if (!this.open()) return false;
    this.queue.push(m);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
    return true;
  }

  /** Resolves once what is queued now has been written to the pipe (right away if nothing is queued). */
  written(): Promise<void> {
    if (!this.scheduled) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const queued = this.queue;
    const waiters = this.waiters;
    this.queue = [];
    this.waiters = [];
    const sent = (): void => {
      for (const w of waiters) w();
    };
    if (!this.open()) {
      this.lost(queued);
      sent();
    } else this.write(queued.length === 1 ? queued[0]! : { tg: 1, b: queued }, sent);
  };
}

/** A request that cannot be answered because the channel to the peer is closed: sending it again cannot help. */
export class ChannelClosed extends Error {
  constructor(type: string | undefined) {
    super(`ipc ${type}: channel closed`);
  }
}

interface Pending {
  resolve: (v: any) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

abstract class Channel {
  protected readonly handlers = new Map<string, Handler>();
  private readonly pending = new Map<number, Pending>();
  private seq = 0;

  /** Registers the handler of one message type; its return value (or promise) is the reply. */
  on(type: string, handler: Handler): void {
    this.handlers.set(type, handler);
  }

  protected deliver(msg: unknown, from: Worker | null, reply: (m: Envelope) => void): void {
    if (msg === null || typeof msg !== 'object' || (msg as Envelope).tg !== 1) return;
    const m = msg as Envelope;
    if (m.b !== undefined) {
      for (const one of m.b) this.deliver(one, from, reply);
      return;
    }
    if (m.re !== undefined) {
      const p = this.pending.get(m.re);
      if (p === undefined) return;
      this.pending.delete(m.re);
      clearTimeout(p.timer);
      if (m.e !== undefined) p.reject(new Error(m.e));
      else p.resolve(m.p);
      return;
    }
    const handler = this.handlers.get(m.t!);
    if (handler === undefined) {
      if (m.id !== undefined) reply({ tg: 1, re: m.id, e: `no handler for ${m.t}` });
      return;
    }
    if (m.id === undefined) {
      handler(m.p, from);
      return;
    }
    // Called now, in arrival order with the one-way messages around it (the
    // ledger relies on it: a settlement, then a retirement, from one worker).
    const id = m.id;
    let result: unknown;
    try {
      result = handler(m.p, from);
    } catch (err) {
      result = Promise.reject(err);
    }
    Promise.resolve(result).then(
      (p) => reply({ tg: 1, re: id, p }),
      (err: Error) => reply({ tg: 1, re: id, e: err.message }),
    );
  }

  protected ask<T>(send: (m: Envelope) => boolean, type: string, payload: unknown, timeoutMs: number): Promise<T> {
    const id = ++this.seq;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`ipc ${type} timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      if (!send({ tg: 1, t: type, id, p: payload })) {
        clearTimeout(timer);
        this.pending.delete(id);
        reject(new ChannelClosed(type));
      }
    });
  }

  /** The channel closed before these went out: their requests fail now rather than at their timeout. */
  protected lost(queued: Envelope[]): void {
    for (const m of queued) {
      const p = m.id !== undefined ? this.pending.get(m.id) : undefined;
      if (p === undefined) continue;
      this.pending.delete(m.id!);
      clearTimeout(p.timer);
      p.reject(new ChannelClosed(m.t));
    }
  }

  /** Rejects everything waiting, e.g. when the other side is gone. */
  failAll(reason: string): void {
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new Error(reason));
      this.pending.delete(id);
    }
  }
}

/** The worker's end: talks to the primary. */
export class WorkerChannel extends Channel {
  private readonly outbox = new Outbox(
    () => process.connected,
    (m, sent) => process.send!(m, sent),
    (queued) => this.lost(queued),
  );

  constructor() {
    super();
    process.on('message', (msg) => this.deliver(msg, null, (m) => this.post(m)));
  }

  private post(m: Envelope): boolean {
    return this.outbox.post(m);
  }

  request<T>(type: string, payload?: unknown, timeoutMs = 5000): Promise<T> {
    return this.ask<T>((m) => this.post(m), type, payload, timeoutMs);
  }

  /** One-way; false when the channel is closed (nothing was sent). */
  send(type: string, payload?: unknown): boolean {
    return this.post({ tg: 1, t: type, p: payload });
  }

  /**
   * Resolves once every message sent so far is written to the pipe (Node
   * calls back at once when the write went through, later if the pipe was
   * full): from then on the primary reads it even if this process dies, and
   * before it sees this worker disconnect.
   */
  written(): Promise<void> {
    return this.outbox.written();
  }
}

/** The primary's end: talks to every worker. */
export class PrimaryChannel extends Channel {
  private readonly outboxes = new WeakMap<Worker, Outbox>();

  attach(worker: Worker): void {
    worker.on('message', (msg) => this.deliver(msg, worker, (m) => this.post(worker, m)));
  }

  private post(worker: Worker, m: Envelope): boolean {
    let outbox = this.outboxes.get(worker);
    if (outbox === undefined) {
      outbox = new Outbox(
        () => worker.isConnected(),
        (e, sent) => worker.send(e, sent),
        (queued) => this.lost(queued),
      );
      this.outboxes.set(worker, outbox);
    }
    return outbox.post(m);
  }

  request<T>(worker: Worker, type: string, payload?: unknown, timeoutMs = 5000): Promise<T> {
    return this.ask<T>((m) => this.post(worker, m), type, payload, timeoutMs);
  }

  /** One-way, to one worker; false when its channel is closed. */
  sendTo(worker: Worker, type: string, payload?: unknown): boolean {
    return this.post(worker, { tg: 1, t: type, p: payload });
  }

  broadcast(type: string, payload?: unknown): void {
    for (const w of Object.values(cluster.workers ?? {})) if (w) this.post(w, { tg: 1, t: type, p: payload });
  }

  workers(): Worker[] {
    return Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && w.isConnected());
  }
}
