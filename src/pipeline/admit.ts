// The stages before the supplier is called: authenticate, validate, resolve
// the model, authorize the key's scope, reserve. Each refuses with the one
// GatewayError the spec names, before any routing or money moves.
import { scopeAllows } from '../auth/scope.js';
import type { ApiKey } from '../auth/types.js';
import { boundFor, countedBound } from '../billing/bound.js';
import type { Bound, BoundRequest, Hold, TighterBound } from '../billing/types.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { ModelCall } from './call.js';

/**
 * A promise only when the key's record must be read from the store; a warm
 * key is admitted at once, with no promise or async frame made for it (the
 * common call's allocations: docs/performance.md, "Where a call's garbage
 * comes from"). Throws, or rejects, invalid_api_key.
 */
export function authenticate(call: ModelCall): Promise<void> | undefined {
  const ctx = call.ctx;
  const key = call.deps.authenticator.authenticate(ctx.authorization, ctx.xApiKey, call.surface.carrier, ctx.keyHash);
  if (key instanceof Promise) return key.then((k) => admitKey(call, k));
  admitKey(call, key);
  return undefined;
}

function admitKey(call: ModelCall, key: ApiKey | null): void {
  if (key === null) throw new GatewayError('invalid_api_key');
  call.key = key;
  call.ctx.orgId = key.orgId;
  call.ctx.keyId = key.id;
}

/**
 * Parses and validates the body, and serializes the upstream body once.
 * Small bodies inline; large ones in the pool, where JSON.parse and the
 * serialization (hundreds of µs for 100 KB) do not hold up the event loop.
 * After authentication, so an unauthenticated flood never costs a parse.
 * A promise only for the pool's way: a small body is prepared at once.
 */
export function prepare(call: ModelCall): Promise<void> | undefined {
  const raw = call.ctx.rawBody!;
  if (raw.length > call.deps.offloadBodyBytes) return preparePooled(call, raw);
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new GatewayError('invalid_json');
  }
  call.prepared = call.surface.prepare(body, raw.length);
  return undefined;
}

async function preparePooled(call: ModelCall, raw: Buffer): Promise<void> {
  const result = await call.deps.offload.prepare(call.name, raw, call.key!.orgId);
  if (!result.ok) throw new GatewayError(result.code, { param: result.param ?? undefined, message: result.message });
  call.prepared = result.prepared;
}

/** Canonical name or alias → the model, if it is served on this surface. */
export function resolveModel(call: ModelCall): void {
  const model = call.deps.catalog.snapshot.byName.get(call.prepared!.decoded.model);
  if (model === undefined || !model.protocols.has(call.surface.protocol)) throw new GatewayError('model_not_found', { param: 'model' });
  call.model = model;
}

/** A scope is a whitelist: outside it the call is refused, not routed. */
export function authorizeScope(call: ModelCall): void {
  if (!scopeAllows(call.key!, call.model!, call.surface.modality)) throw new GatewayError('scope_denied', { param: 'model' });
}

/**
 * Holds the call's bound: the request's, within the model's ceilings. The
 * cheap input estimate goes first (no tokenizer on the event loop); only when
 * it does not fit the funds is the text counted, in the worker pool, for a
 * tighter estimate (docs/billing.md, "Input estimate") — and not even then
 * when no count could make it fit (CountedInput.floor). Undefined when the
 * call was reserved at once from this worker's allotment (the common call);
 * a promise when the ledger's actor is asked.
 */
export function reserve(call: ModelCall): Promise<void> | undefined {
  const request = call.prepared!.decoded.bound;
  const model = call.model!;
  const bound = boundFor(request, model);
  const from = performance.now();
  const holding = call.deps.billing.reserve(call.ctx.requestId, call.key!, model, call.surface.protocol, bound, new CountedInput(call, request, bound));
  if (holding instanceof Promise) return holding.then((hold) => reserved(call, hold, from));
  reserved(call, holding, from);
  return undefined;
}

function reserved(call: ModelCall, hold: Hold, from: number): void {
  call.hold = hold;
  const to = performance.now();
  call.reserveMs = to - from;
  if (call.trace !== null) call.trace.stage('reservation', from, to, { 'tollgate.reserved_micros': hold.reserved });
}

/** The tighter bound billing asks for when the cheap one is refused (one object per call, as the closure it replaced). */
class CountedInput implements TighterBound {
  constructor(
    private readonly call: ModelCall,
    private readonly request: BoundRequest,
    private readonly bound: Bound,
  ) {}

  floor(): Bound {
    return countedBound(this.request, this.bound, 0, this.call.model!);
  }

  async count(): Promise<Bound | null> {
    const call = this.call;
    const [tokens] = await call.deps.offload.countTokens([call.surface.inputText(call.prepared!)], call.key!.orgId);
    return countedBound(this.request, this.bound, tokens!, call.model!);
  }
}
