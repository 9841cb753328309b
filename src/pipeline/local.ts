// A local operation, top to bottom (count_tokens): authenticate → take one
// of the key's concurrent slots → the local quota → decode → resolve the
// model → authorize scope → compute → answer. No reservation, no supplier:
// nothing here reaches the ledger, so nothing is charged or counted against
// the organization's model-call quotas; the operation has a quota of its own
// (local-quota.ts), shares the key's slots with its model calls, and its pool
// work is the organization's share of the pool (offload/fair-share.ts), so
// one key cannot occupy the worker (issue 30 item 4).
import { scopeAllows } from '../auth/scope.js';
import type { CatalogModel } from '../catalog/types.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { RequestContext, Route } from '../server/context.js';
import { nestingError, nestingFault } from '../server/json-depth.js';
import { sendJson } from '../server/respond.js';
import type { LocalOperation, LocalTools } from '../surfaces/local-operation.js';
import type { LocalEntry } from '../surfaces/index.js';
import { surfacePrefix } from '../surfaces/surface.js';
import type { PipelineDeps } from './deps.js';

/**
 * Parses and validates the body: small bodies inline, large ones (over
 * pools.offload_body_bytes, as for model calls) in the pool, where the
 * operation's inPool step (count_tokens: the token count) runs in the same
 * task. After authentication, so an unauthenticated flood never costs a parse.
 */
async function decode<D>(name: string, op: LocalOperation<D>, ctx: RequestContext, deps: PipelineDeps, orgId: string): Promise<D> {
  const raw = ctx.rawBody!;
  if (raw.length > deps.offloadBodyBytes) {
    const result = await deps.offload.decodeLocal(name, raw, orgId);
    if (!result.ok) {
      if (result.code === 'nesting_too_deep') throw nestingError(result.param, deps.maxJsonDepth);
      throw new GatewayError(result.code, { param: result.param ?? undefined, message: result.message });
    }
    return result.decoded as D;
  }
  // V8's JSON.parse recurses: bound the nesting on the bytes first (the pool task does the same).
  const fault = nestingFault(raw, deps.maxJsonDepth);
  if (fault !== null) throw nestingError(fault, deps.maxJsonDepth);
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new GatewayError('invalid_json');
  }
  return op.decode(body, raw.length);
}

/** Canonical name or alias → the model, if it is served on the operation's protocol. */
function resolve<D>(op: LocalOperation<D>, decoded: D, deps: PipelineDeps): CatalogModel {
  const model = deps.catalog.snapshot.byName.get(op.modelOf(decoded));
  if (model === undefined || !model.protocols.has(op.protocol)) throw new GatewayError('model_not_found', { param: 'model' });
  return model;
}

export async function runLocal<D>(name: string, op: LocalOperation<D>, ctx: RequestContext, deps: PipelineDeps): Promise<void> {
  const key = await deps.authenticator.authenticate(ctx.authorization, ctx.xApiKey, op.carrier, ctx.keyHash);
  if (key === null) throw new GatewayError('invalid_api_key');
  ctx.orgId = key.orgId;
  ctx.keyId = key.id;
  deps.keySlots.take(key.id);
  try {
    // Before the body is parsed: a refused call costs no parse and no pool time.
    deps.localQuota.admit(key.orgId);
    const decoded = await decode(name, op, ctx, deps, key.orgId);
    const model = resolve(op, decoded, deps);
    if (!scopeAllows(key, model, op.modality)) throw new GatewayError('scope_denied', { param: 'model' });
    const tools: LocalTools = { countTokens: (texts) => deps.offload.countTokens(texts, key.orgId) };
    const answer = await op.compute(decoded, model, tools);
    sendJson(ctx, 200, answer);
  } finally {
    deps.keySlots.release(key.id);
  }
}

/** The server route of a local operation of the registry (the pool finds it by the same entry name). */
export function localRoute(entry: LocalEntry, deps: PipelineDeps): Route {
  const op = entry.operation;
  return {
    method: 'post',
    path: op.path,
    prefix: surfacePrefix(op.path),
    surface: entry.name,
    envelope: op.envelope,
    readsBody: true,
    rawBody: true,
    handle: (ctx) => runLocal(entry.name, op, ctx, deps),
  };
}
