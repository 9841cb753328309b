// Request/response and one-way messages between the cluster primary and its
// workers, over Node's cluster IPC channel. Used for change notifications,
// metrics collection and (in the embedded default) the ledger actors.
import cluster, { type Worker } from 'node:cluster';

type Handler = (payload: any, from: Worker | null) => unknown;

interface Envelope {
  tg: 1;
  t?: string; // message type (requests and one-way messages)
  id?: number; // set when a reply is expected
  re?: number; // set on replies
  p?: unknown;
  e?: string; // error text on a failed reply
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
    const id = m.id;
    Promise.resolve()
      .then(() => handler(m.p, from))
      .then(
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
        reject(new Error(`ipc ${type}: channel closed`));
      }
    });
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
  constructor() {
    super();
    process.on('message', (msg) => this.deliver(msg, null, (m) => this.post(m)));
  }

  /** False only when the channel is closed; a full backlog still queues the message. */
  private post(m: Envelope): boolean {
    if (!process.connected) return false;
    process.send!(m);
    return true;
  }

  request<T>(type: string, payload?: unknown, timeoutMs = 5000): Promise<T> {
    return this.ask<T>((m) => this.post(m), type, payload, timeoutMs);
  }

  send(type: string, payload?: unknown): void {
    this.post({ tg: 1, t: type, p: payload });
  }
}

/** The primary's end: talks to every worker. */
export class PrimaryChannel extends Channel {
  attach(worker: Worker): void {
    worker.on('message', (msg) => this.deliver(msg, worker, (m) => this.post(worker, m)));
  }

  private post(worker: Worker, m: Envelope): boolean {
    if (!worker.isConnected()) return false;
    worker.send(m);
    return true;
  }

  request<T>(worker: Worker, type: string, payload?: unknown, timeoutMs = 5000): Promise<T> {
    return this.ask<T>((m) => this.post(worker, m), type, payload, timeoutMs);
  }

  broadcast(type: string, payload?: unknown): void {
    for (const w of Object.values(cluster.workers ?? {})) if (w) this.post(w, { tg: 1, t: type, p: payload });
  }

  workers(): Worker[] {
    return Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && w.isConnected());
  }
}
