// The operator listener: GET /metrics for the whole instance, on its own
// address (ops.host, loopback by default), never on the API port, since it
// shows every organization's held amount and the instance's internals
// (issue 30 item 13). The cluster primary serves it, where every process's
// snapshot is merged, so there is one listener per instance whatever the
// worker count. A scrape is rare and small: node:http, which binds its port
// exclusively (a second instance on the same port fails its start instead of
// silently sharing it, as uWS's SO_REUSEPORT would).
import { createServer, type Server, type ServerResponse } from 'node:http';
import { renderError } from '../errors/envelopes.js';
import { GatewayError } from '../errors/gateway-error.js';
import { newRequestId } from './context.js';
import { JSON_TYPE } from './respond.js';

export interface OpsServerOptions {
  host: string;
  /** 0 or null: no listener. */
  port: number | null;
  /** Prometheus text covering every process of this instance. */
  metricsText(): Promise<string>;
  /** A scrape that failed (a worker did not answer in time): logged, answered 503. */
  onError(err: unknown): void;
}

export interface OpsServer {
  /** The port listened on. */
  port: number;
  close(): Promise<void>;
}

const PROMETHEUS_TYPE = 'text/plain; version=0.0.4';

function refuse(res: ServerResponse, code: 'not_found' | 'method_not_allowed' | 'service_unavailable', headers: Record<string, string> = {}): void {
  const rid = newRequestId();
  const err = new GatewayError(code);
  res.writeHead(err.status, { 'Content-Type': JSON_TYPE, 'X-Request-Id': rid, ...headers });
  res.end(renderError('rest', err, rid));
}

/** Starts the listener, or resolves null when it is disabled; rejects when the address cannot be bound. */
export function startOpsServer(opts: OpsServerOptions): Promise<OpsServer | null> {
  if (opts.port === null || opts.port === 0) return Promise.resolve(null);
  const server: Server = createServer((req, res) => {
    // Nothing here reads a body: one that comes is discarded.
    req.resume();
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') return refuse(res, 'not_found');
    if (req.method !== 'GET' && req.method !== 'HEAD') return refuse(res, 'method_not_allowed', { Allow: 'GET, HEAD' });
    opts.metricsText().then(
      (text) => {
        res.writeHead(200, { 'Content-Type': PROMETHEUS_TYPE, 'Content-Length': Buffer.byteLength(text) });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (err: unknown) => {
        opts.onError(err);
        if (!res.headersSent) refuse(res, 'service_unavailable');
      },
    );
  });
  // A slow or idle scraper holds a socket for seconds at most.
  server.requestTimeout = 10_000;
  server.headersTimeout = 10_000;
  server.keepAliveTimeout = 5_000;
  return new Promise((resolve, reject) => {
    server.once('error', (err) => reject(new Error(`cannot listen on ${opts.host}:${opts.port} for ops (ops.host, ops.port; port 0 = none): ${err.message}`)));
    server.listen(opts.port!, opts.host, () => {
      const address = server.address();
      resolve({
        port: typeof address === 'object' && address !== null ? address.port : opts.port!,
        close: () => new Promise<void>((done) => server.close(() => done())),
      });
    });
  });
}
