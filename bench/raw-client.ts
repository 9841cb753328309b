// A lean HTTP/1.1 client for the load generator (--client raw): keep-alive
// connections, one request in flight on each, the request's bytes built once
// and written as they are, the answer read by its Content-Length or its
// chunks. It calls the same handler methods undici's dispatch() does, so the
// load generator's lanes and pacing run unchanged on either client.
//
// Why: undici costs ~29 µs of client CPU per unary call on the development
// machine (user 19, system 10), this one ~20 (user 9, system 11: the system
// calls stay), so fewer load processes send what a cluster of 12 workers
// serves (docs/performance.md, "The load side").
// It knows only what the bench's own targets answer: no redirects, no
// pipelining, no upgrade, no compression.
import { connect, type Socket } from 'node:net';
import type { Dispatcher } from 'undici';

const CRLF2 = Buffer.from('\r\n\r\n');

type Handler = Pick<Dispatcher.DispatchHandler, 'onResponseStart' | 'onResponseData' | 'onResponseEnd' | 'onResponseError'>;

const enum State {
  Idle,
  Head,
  Body,
  ChunkSize,
  ChunkData,
  ChunkEnd,
  Trailers,
}

class RawConnection {
  private socket: Socket | null = null;
  private handler: Handler | null = null;
  private state = State.Idle;
  private pending: Buffer | null = null;
  /** Body bytes still to come (Content-Length), or of the current chunk. */
  private remaining = 0;
  private closeAfter = false;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly request: Buffer,
    private readonly free: (c: RawConnection) => void,
  ) {}

  send(handler: Handler): void {
    this.handler = handler;
    this.state = State.Head;
    this.pending = null;
    if (this.socket === null) this.open();
    this.socket!.write(this.request);
  }

  close(): void {
    this.socket?.destroy();
    this.socket = null;
  }

  private open(): void {
    const socket = connect({ host: this.host, port: this.port, noDelay: true });
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => this.read(chunk));
    const gone = (err?: Error): void => {
      if (this.socket !== socket) return;
      this.socket = null;
      if (this.state !== State.Idle) this.fail(err ?? Object.assign(new Error('the server closed the connection'), { code: 'ECONNRESET' }));
    };
    socket.on('error', gone);
    socket.on('close', () => gone());
  }

  private fail(err: Error): void {
    const h = this.handler!;
    this.state = State.Idle;
    this.handler = null;
    this.close();
    // Free again: the next call on it opens a new connection.
    this.free(this);
    h.onResponseError!(null as never, err);
  }

  private read(chunk: Buffer): void {
    let buf = this.pending === null ? chunk : Buffer.concat([this.pending, chunk]);
    this.pending = null;
    let at = 0;
    while (at < buf.length && this.state !== State.Idle) {
      if (this.state === State.Head) {
        const end = buf.indexOf(CRLF2, at);
        if (end < 0) break;
        const head = buf.toString('latin1', at, end).toLowerCase();
        at = end + 4;
        const status = Number(head.slice(9, 12));
        this.closeAfter = head.includes('\r\nconnection: close');
        const length = /\r\ncontent-length: *(\d+)/.exec(head);
        this.handler!.onResponseStart!(null as never, status, {}, '');
        if (length !== null) {
          this.remaining = Number(length[1]);
          this.state = State.Body;
          if (this.remaining === 0) this.end();
        } else if (head.includes('\r\ntransfer-encoding: chunked')) this.state = State.ChunkSize;
        else return this.fail(new Error('an answer with neither Content-Length nor chunks'));
      } else if (this.state === State.Body || this.state === State.ChunkData) {
        const n = Math.min(this.remaining, buf.length - at);
        this.handler!.onResponseData!(null as never, buf.subarray(at, at + n));
        at += n;
        this.remaining -= n;
        if (this.remaining === 0) {
          if (this.state === State.Body) this.end();
          else this.state = State.ChunkEnd;
        }
      } else {
        // A chunk's size line, the CRLF after its data, or the trailers' end: each a line.
        const eol = buf.indexOf('\r\n', at);
        if (eol < 0) break;
        const line = buf.toString('latin1', at, eol);
        at = eol + 2;
        if (this.state === State.ChunkEnd) this.state = State.ChunkSize;
        else if (this.state === State.Trailers) {
          if (line === '') this.end();
        } else {
          this.remaining = parseInt(line, 16);
          if (!Number.isFinite(this.remaining)) return this.fail(new Error(`a bad chunk size '${line.slice(0, 20)}'`));
          this.state = this.remaining === 0 ? State.Trailers : State.ChunkData;
        }
      }
    }
    if (at < buf.length && this.state !== State.Idle) this.pending = buf.subarray(at);
  }

  private end(): void {
    const h = this.handler!;
    this.state = State.Idle;
    this.handler = null;
    if (this.closeAfter) this.close();
    // Free before the handler runs: its lane sends the next request at once, on this connection.
    this.free(this);
    h.onResponseEnd!(null as never, {});
  }
}

/** The part of undici's Pool the load generator uses: dispatch onto a free connection, or queue. */
export class RawPool {
  private readonly idle: RawConnection[] = [];
  private readonly all: RawConnection[] = [];
  private readonly queue: Handler[] = [];

  constructor(origin: string, path: string, headers: Record<string, string>, body: Buffer, connections: number) {
    const url = new URL(origin);
    const lines = [`POST ${path} HTTP/1.1`, `host: ${url.host}`, 'content-type: application/json', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), `content-length: ${body.length}`];
    const request = Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), body]);
    const free = (c: RawConnection): void => {
      const next = this.queue.shift();
      if (next !== undefined) queueMicrotask(() => c.send(next));
      else this.idle.push(c);
    };
    for (let i = 0; i < connections; i++) {
      const c = new RawConnection(url.hostname, Number(url.port), request, free);
      this.all.push(c);
      this.idle.push(c);
    }
  }

  dispatch(_opts: unknown, handler: Handler): void {
    const c = this.idle.pop();
    if (c === undefined) this.queue.push(handler);
    else c.send(handler);
  }

  destroy(): Promise<void> {
    for (const c of this.all) c.close();
    return Promise.resolve();
  }
}
