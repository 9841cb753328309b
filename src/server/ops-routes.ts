// Operator endpoints, open: liveness, readiness, Prometheus metrics.
import type { Route } from './context.js';
import { send, sendJson } from './respond.js';

export interface OpsDeps {
  /** Store reachable and catalog loaded. */
  ready(): boolean;
  /** Prometheus text covering every process of this instance. */
  metricsText(): Promise<string>;
}

const OK = JSON.stringify({ status: 'ok' });
const NOT_READY = JSON.stringify({ status: 'not_ready' });

export function opsRoutes(deps: OpsDeps): Route[] {
  return [
    { method: 'get', path: '/healthz', surface: 'ops', envelope: 'rest', readsBody: false, handle: (ctx) => sendJson(ctx, 200, OK) },
    {
      method: 'get',
      path: '/readyz',
      surface: 'ops',
      envelope: 'rest',
      readsBody: false,
      handle: (ctx) => (deps.ready() ? sendJson(ctx, 200, OK) : sendJson(ctx, 503, NOT_READY)),
    },
    {
      method: 'get',
      path: '/metrics',
      surface: 'ops',
      envelope: 'rest',
      readsBody: false,
      async handle(ctx) {
        const text = await deps.metricsText();
        send(ctx, 200, 'text/plain; version=0.0.4', text);
      },
    },
  ];
}
