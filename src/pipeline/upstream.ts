// Calling the suppliers: failover happens inside the dispatcher, before any
// byte has gone to the client. A 4xx the supplier meant for the request is
// mapped into the error catalogue (its text is not passed on: messages are
// fixed safe sentences).
import type { Route } from '../catalog/types.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { UpstreamReply } from '../suppliers/dispatch.js';
import type { ModelCall } from './call.js';

/** `tried`: routes whose 2xx reply was unusable earlier in this call, skipped (none left: upstream_error). */
export async function callSuppliers(call: ModelCall, tried: ReadonlySet<Route> | null = null): Promise<UpstreamReply> {
  const model = call.model!;
  const routes = model.protocols.get(call.surface.protocol)!.routes;
  // Megabyte replies (embeddings, images: unary) are received and decoded by a pool thread, never on the event loop.
  const prepared = call.prepared!;
  const from = performance.now();
  const transport = call.surface.fetchInPool === true && !prepared.decoded.stream ? call.deps.offload.fetchTransport(call.name, prepared.meta, call.key!.orgId) : null;
  const reply = await call.deps.suppliers.send(
    call.surface.protocol,
    routes,
    (route) => call.surface.upstreamBody(prepared, route, model.maxOutputTokens),
    call.abort,
    tried,
    transport,
    call.trace,
  );
  call.supplierTtfbMs = performance.now() - from;
  call.supplier = reply.route.supplier.name;
  call.route = reply.route;
  call.attempts += reply.attempts;
  return reply;
}

/** A 2xx whose body is not the protocol's reply, found before anything reached the client; the call is not settled yet (run.ts fails over). */
export class UnusableReply extends Error {}

export function refusalFromSupplier(status: number): GatewayError {
  switch (status) {
    case 400:
    case 422:
      return new GatewayError('invalid_request');
    case 408:
      return new GatewayError('upstream_timeout');
    case 413:
      return new GatewayError('body_too_large');
    default:
      // 401/403/404 from a supplier are our configuration's fault, not the caller's.
      return new GatewayError('upstream_error');
  }
}
