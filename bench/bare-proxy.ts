// The bare pass-through proxy: the practical floor a gateway on this stack is
// measured against. uWebSockets.js in front, an undici Pool (keep-alive) to
// the supplier behind, and nothing else: no parsing, no auth, no logging. It
// forwards a POST body to `--upstream` + the request path and streams the
// answer back with backpressure both ways (uWS onWritable ↔ undici pause/resume).
//
//   node dist/bench/bare-proxy.js --upstream http://127.0.0.1:7071/alpha [--port 0] [--host 127.0.0.1]
// Prints {"bare":url} once listening; exits on SIGTERM/SIGINT, or when its parent dies.
import { STATUS_CODES } from 'node:http';
import { parseArgs } from 'node:util';
import { Pool, type Dispatcher } from 'undici';
import { readBody } from '../src/server/body.js';
import { App, assertNativeUws, closeListenSocket, listenSocketPort, type HttpResponse } from '../src/server/uws.js';

const { values } = parseArgs({
  options: {
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string', default: '0' },
    upstream: { type: 'string' },
    connections: { type: 'string', default: '128' },
  },
});
if (values.upstream === undefined) {
  process.stderr.write('bare-proxy: --upstream URL is required\n');
  process.exit(2);
}
const upstream = new URL(values.upstream);
const prefix = upstream.pathname.replace(/\/$/, '');
const MAX_BODY = 32 << 20;
// Same pool settings as the gateway's supplier pools, so the floor is comparable.
const pool = new Pool(upstream.origin, { connections: Number(values.connections), keepAliveTimeout: 30_000, headersTimeout: 300_000, bodyTimeout: 120_000 });

const statusLines = new Map<number, string>();
function statusLine(code: number): string {
  let line = statusLines.get(code);
  if (line === undefined) statusLines.set(code, (line = `${code} ${STATUS_CODES[code] ?? 'Unknown'}`));
  return line;
}

/** One forwarded exchange; also the undici handler of its upstream request. */
class Forward implements Dispatcher.DispatchHandler {
  aborted = false;
  private controller: Dispatcher.DispatchController | null = null;
  private status = 502;
  private contentType = '';
  /** Content-Length of the upstream answer, or -1 (streamed: chunked to the client). */
  private total = -1;
  private opened = false;
  private ended = false;
  /** The part of a chunk uWS did not take yet (known-length answers), and the write offset it starts at. */
  private stuck: Buffer | null = null;
  private stuckAt = 0;

  constructor(private readonly res: HttpResponse) {}

  abort(): void {
    this.aborted = true;
    this.controller?.abort(new Error('client went away'));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.aborted) controller.abort(new Error('client went away'));
  }

  onResponseStart(_c: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    this.status = statusCode;
    this.contentType = String(headers['content-type'] ?? '');
    const length = headers['content-length'];
    this.total = length === undefined ? -1 : Number(length);
  }

  private open(): void {
    this.opened = true;
    this.res.writeStatus(statusLine(this.status));
    if (this.contentType !== '') this.res.writeHeader('content-type', this.contentType);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.aborted || this.ended) return;
    const res = this.res;
    let ok = true;
    res.cork(() => {
      if (!this.opened) this.open();
      if (this.total >= 0) {
        // Known length: tryEnd sends it with Content-Length, and ends the response with its last byte.
        const at = res.getWriteOffset();
        const [accepted, done] = res.tryEnd(chunk, this.total);
        if (done) this.ended = true;
        else if (!accepted) {
          this.stuck = chunk;
          this.stuckAt = at;
          ok = false;
        }
      } else ok = res.write(chunk);
    });
    if (!ok) {
      controller.pause();
      res.onWritable((offset) => this.writable(offset));
    }
  }

  private writable(offset: number): boolean {
    if (this.aborted) return true;
    if (this.stuck !== null) {
      const [accepted, done] = this.res.tryEnd(this.stuck.subarray(offset - this.stuckAt), this.total);
      if (done) this.ended = true;
      else if (!accepted) return false;
      this.stuck = null;
    }
    this.controller?.resume();
    return true;
  }

  onResponseEnd(): void {
    if (this.aborted || this.ended) return;
    this.ended = true;
    this.res.cork(() => {
      if (!this.opened) this.open();
      this.res.end();
    });
  }

  onResponseError(_c: Dispatcher.DispatchController, _err: Error): void {
    if (this.aborted || this.ended) return;
    this.ended = true;
    if (this.opened) this.res.close();
    else this.res.cork(() => this.res.writeStatus('502 Bad Gateway').end());
  }
}

assertNativeUws();
const app = App();
app.post('/*', (res, req) => {
  const forward = new Forward(res);
  res.onAborted(() => forward.abort());
  const query = req.getQuery();
  const path = prefix + req.getUrl() + (query ? `?${query}` : '');
  const contentType = req.getHeader('content-type');
  readBody(res, req.getHeader('content-length'), MAX_BODY, (tooLarge, body) => {
    if (forward.aborted) return;
    if (tooLarge !== null) {
      res.cork(() => res.writeStatus('413 Payload Too Large').end());
      return;
    }
    pool.dispatch({ method: 'POST', path, headers: { 'content-type': contentType || 'application/json' }, body }, forward);
  });
});
app.any('/*', (res) => {
  res.writeStatus('404 Not Found').end();
});

app.listen(values.host!, Number(values.port), (socket) => {
  if (socket === false) {
    process.stderr.write(`bare-proxy: cannot listen on ${values.host}:${values.port}\n`);
    process.exit(1);
  }
  process.stdout.write(`${JSON.stringify({ bare: `http://${values.host}:${listenSocketPort(socket)}` })}\n`);
  const stop = (): void => {
    closeListenSocket(socket);
    void pool.close().finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  // A benchmark runner killed with SIGKILL cannot stop us: notice that our parent changed.
  const parent = process.ppid;
  setInterval(() => process.ppid !== parent && stop(), 1000).unref();
});
