// A model call, top to bottom, as the spec orders it:
// key in the live-key index (server, before the body: routes.ts, keyCheck)
// → read body (server) → authenticate → take one of the key's concurrent slots
// → bound nesting → parse and validate → resolve model → authorize scope
// → admit and reserve → verify (responses: previous_response_id) → dispatch to a supplier (failover before the first
// byte) → answer (unary or stream) → settle → log (server).
import type { Route as CatalogRoute } from '../catalog/types.js';
import { GatewayError } from '../errors/gateway-error.js';
import { WithdrawnFromPool } from '../offload/pool.js';
import type { Route } from '../server/context.js';
import type { UpstreamReply } from '../suppliers/dispatch.js';
import type { ModelCallEntry } from '../surfaces/index.js';
import { surfacePrefix } from '../surfaces/surface.js';
import { authenticate, authorizeScope, prepare, reserve, resolveModel } from './admit.js';
import { answerStream } from './answer-stream.js';
import { answerUnary } from './answer-unary.js';
import { ModelCall } from './call.js';
import type { PipelineDeps } from './deps.js';
import { boundNesting } from './nesting.js';
import { settleUnanswered } from './settle.js';
import { callSuppliers, UnusableReply } from './upstream.js';

export async function runModelCall(call: ModelCall): Promise<void> {
  const authenticating = authenticate(call); // undefined for a warm key: nothing to wait for
  if (authenticating !== undefined) await authenticating;
  const keyId = call.key!.id;
  call.deps.keySlots.take(keyId);
  try {
    boundNesting(call);
    const preparing = prepare(call); // undefined for a small body, prepared here
    if (preparing !== undefined) await preparing;
    resolveModel(call);
    authorizeScope(call);
    // A surface with no transcoder never prepares a stream (its schema has no such member): a bug, not the caller's fault.
    if (call.prepared!.decoded.stream && call.surface.stream === undefined) throw new GatewayError('internal_error');
    const reserving = reserve(call); // undefined when this worker's allotment took the call
    if (reserving !== undefined) await reserving;
    if (call.surface.verify !== undefined) await verify(call);
    // A client gone before dispatch costs nothing; after it, its input (settle.ts, settleUnanswered).
    let dispatched = false;
    try {
      dispatched = !call.ctx.aborted;
      const upstream = await callSuppliers(call);
      await answerWithFailover(call, upstream, call.prepared!.decoded.stream ? answerStream : answerUnary);
    } catch (err) {
      if (err instanceof WithdrawnFromPool) dispatched = false; // it never left the fetch pool's queue
      throw err;
    } finally {
      // Every path above settles; this catches the ones that threw first
      // (no supplier answered, the client left during dispatch): nothing was
      // produced; the hold is released, less the input of a cancelled call.
      if (!call.settled) await settleUnanswered(call, dispatched);
    }
  } finally {
    // Once per take, whatever happened after it (refused, settled, failed, aborted).
    call.deps.keySlots.release(keyId);
  }
}

/**
 * A surface's own check, after admission (issue 30 item 10: a check that may
 * ask the store is counted against the quota, and an exhausted quota refuses
 * before it asks) and before any supplier. Admission and the hold are one
 * step in the ledger, so a refused call's hold is released: nothing charged,
 * no usage row.
 */
async function verify(call: ModelCall): Promise<void> {
  try {
    await call.surface.verify!(call.prepared!, call.info(), call.deps.services);
  } catch (err) {
    call.settled = true;
    await call.deps.billing.release(call.hold!);
    throw err;
  }
}

/**
 * Failover after a 2xx, wherever the first byte has not gone out: a unary
 * reply is read whole before anything is sent, and a stream is given up
 * before its first frame reaches the client, so a 2xx whose body is unusable
 * (not JSON, an error object, a stream broken or ended before its first
 * event) goes to the next route like a 5xx would: each route tried once at
 * most, then upstream_error. The hold stays open across the attempts.
 */
async function answerWithFailover(call: ModelCall, first: UpstreamReply, answer: (call: ModelCall, upstream: UpstreamReply) => Promise<void>): Promise<void> {
  const tried = new Set<CatalogRoute>();
  let upstream = first;
  for (;;) {
    try {
      return await answer(call, upstream);
    } catch (err) {
      if (!(err instanceof UnusableReply)) throw err;
      call.deps.suppliers.unusableReply(upstream.route);
      if (call.ctx.aborted) return;
      tried.add(upstream.route);
      upstream = await callSuppliers(call, tried);
    }
  }
}

/** The server route of a model-call surface: one generic handler for every entry of the registry. */
export function modelRoute(entry: ModelCallEntry, deps: PipelineDeps): Route {
  const surface = entry.surface;
  return {
    method: 'post',
    path: surface.path,
    prefix: surfacePrefix(surface.path),
    surface: entry.name,
    envelope: surface.envelope,
    readsBody: true,
    rawBody: true,
    handle: (ctx) => runModelCall(new ModelCall(ctx, entry.name, surface, deps)),
  };
}
