// The stages before the supplier is called: authenticate, validate, resolve
// the model, authorize the key's scope, reserve. Each refuses with the one
// GatewayError the spec names, before any routing or money moves.
import { scopeAllows } from '../auth/scope.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { ModelCall } from './call.js';

export async function authenticate(call: ModelCall): Promise<void> {
  const ctx = call.ctx;
  const key = await call.deps.authenticator.authenticate(ctx.authorization, ctx.xApiKey, call.surface.carrier);
  if (key === null) throw new GatewayError('invalid_api_key');
  call.key = key;
  ctx.orgId = key.orgId;
  ctx.keyId = key.id;
}

export function validate(call: ModelCall): void {
  call.decoded = call.surface.decode(call.ctx.body, call.ctx.bodyBytes);
}

/** Canonical name or alias → the model, if it is served on this surface. */
export function resolveModel(call: ModelCall): void {
  const model = call.deps.catalog.snapshot.byName.get(call.decoded!.model);
  if (model === undefined || !model.protocols.has(call.surface.protocol)) throw new GatewayError('model_not_found', { param: 'model' });
  call.model = model;
}

/** A scope is a whitelist: outside it the call is refused, not routed. */
export function authorizeScope(call: ModelCall): void {
  if (!scopeAllows(call.key!, call.model!, call.surface.modality)) throw new GatewayError('scope_denied', { param: 'model' });
}

export async function reserve(call: ModelCall): Promise<void> {
  call.hold = await call.deps.billing.reserve(call.ctx.requestId, call.key!, call.model!, call.surface.protocol, call.decoded!.bound);
}
