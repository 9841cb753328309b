// One model call's state, every field set in the constructor (fixed shape).
// Stages fill it in order; settlement reads it.
import type { ApiKey } from '../auth/types.js';
import type { Hold } from '../billing/types.js';
import type { UsageRow } from '../ledger/protocol.js';
import type { CallTrace } from '../metrics/tracing.js';
import type { CatalogModel, Route } from '../catalog/types.js';
import { jsonString } from '../log/request-line.js';
import type { RequestContext } from '../server/context.js';
import { CallAbort } from '../suppliers/abort.js';
import type { CallInfo, ModelSurface, Prepared } from '../surfaces/surface.js';
import type { PipelineDeps } from './deps.js';

export class ModelCall {
  /** Aborted when the client goes away: cancels the upstream request. */
  readonly abort = new CallAbort();
  readonly created = Math.floor(Date.now() / 1000);
  key: ApiKey | null = null;
  prepared: Prepared | null = null;
  model: CatalogModel | null = null;
  hold: Hold | null = null;
  /** Name of the supplier that answered. */
  supplier: string | null = null;
  /** ms from request start to the first byte sent, for the usage row. */
  firstByteMs: number | null = null;
  settled = false;
  /** What the ledger took at settlement (null: nothing settled or not delivered): the request log line reads it. */
  usage: UsageRow | null = null;
  /** ms spent waiting for the reservation (admission, hold, a token count when the estimate did not fit). */
  reserveMs: number | null = null;
  /** ms from dispatch to the answering supplier's response headers (failed attempts included). */
  supplierTtfbMs: number | null = null;
  /** The answering route (its upstream model name is logged), and how many routes were tried to get it (failover). */
  route: Route | null = null;
  attempts = 0;
  /** This call's trace; null when tracing is off or the call is not sampled. */
  readonly trace: CallTrace | null;

  constructor(
    readonly ctx: RequestContext,
    /** The surface's registry name (surfaces/index.ts): what the pool looks it up by. */
    readonly name: string,
    readonly surface: ModelSurface,
    readonly deps: PipelineDeps,
  ) {
    ctx.onAbort = () => this.abort.abort();
    ctx.call = this;
    this.trace = deps.tracer === null ? null : deps.tracer.startCall(name, ctx.traceparent, ctx.startedAt);
  }

  /** The fields of the request log line this call adds (server/http-server.ts requestDone): never a prompt, an answer or a key. */
  logFields(into: Record<string, unknown>): void {
    if (this.model !== null) into.model = this.model.canonicalName;
    if (this.supplier !== null) {
      into.supplier = this.supplier;
      into.route = this.route!.upstreamModel;
      into.attempts = this.attempts;
    }
    if (this.reserveMs !== null) into.reserve_ms = round1(this.reserveMs);
    if (this.supplierTtfbMs !== null) into.supplier_ttfb_ms = round1(this.supplierTtfbMs);
    const u = this.usage;
    if (u !== null) {
      into.outcome = u.outcome;
      into.input_tokens = u.inputTokens;
      into.cached_input_tokens = u.cachedInputTokens;
      into.output_tokens = u.outputTokens;
      into.image_units = u.imageUnits;
      into.charged_micros = u.chargedMicros;
      into.metered_source = u.meteredSource;
    }
    if (this.trace !== null) this.trace.end(into);
  }

  /** logFields' fields, in its order, as JSON members; null when traced (the span reads logFields' object). */
  logJson(): string | null {
    if (this.trace !== null) return null;
    let json = this.model === null ? '' : modelMember(this.model);
    if (this.supplier !== null) json += routeMembers(this.route!) + ',"attempts":' + this.attempts;
    if (this.reserveMs !== null) json += ',"reserve_ms":' + round1(this.reserveMs);
    if (this.supplierTtfbMs !== null) json += ',"supplier_ttfb_ms":' + round1(this.supplierTtfbMs);
    const u = this.usage;
    if (u !== null) {
      json +=
        ',"outcome":' + jsonString(u.outcome) + ',"input_tokens":' + u.inputTokens + ',"cached_input_tokens":' + u.cachedInputTokens + ',"output_tokens":' + u.outputTokens +
        ',"image_units":' + u.imageUnits + ',"charged_micros":' + u.chargedMicros + ',"metered_source":' + (u.meteredSource === null ? 'null' : jsonString(u.meteredSource));
    }
    return json;
  }

  info(): CallInfo {
    return { requestId: this.ctx.requestId, model: this.prepared!.decoded.model, created: this.created, orgId: this.key!.orgId };
  }
}

function round1(ms: number): number {
  return Math.round(ms * 10) / 10;
}

// The log line's members that depend only on catalog objects, serialized once per object rather than per call.
const modelMembers = new WeakMap<CatalogModel, string>();
const routeMembersOf = new WeakMap<Route, string>();

function modelMember(model: CatalogModel): string {
  let json = modelMembers.get(model);
  if (json === undefined) modelMembers.set(model, (json = ',"model":' + jsonString(model.canonicalName)));
  return json;
}

function routeMembers(route: Route): string {
  let json = routeMembersOf.get(route);
  if (json === undefined) routeMembersOf.set(route, (json = ',"supplier":' + jsonString(route.supplier.name) + ',"route":' + jsonString(route.upstreamModel)));
  return json;
}
