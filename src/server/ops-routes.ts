// Liveness and readiness, open, on the API port where load balancers look.
// /metrics is not here: the primary serves it on the operator listener
// (ops-server.ts), off the API port.
import type { Route } from './context.js';
import { sendJson } from './respond.js';

export interface OpsDeps {
  /** Store reachable and catalog loaded. */
  ready(): boolean;
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
  ];
}
