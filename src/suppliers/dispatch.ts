// Sends a model call to its suppliers in route order. Before the first byte
// has gone to the client, a connect error, a timeout, a 5xx or a 429 moves the
// call to the next route; after that the caller owns the reply and nothing is
// retried. One undici Pool (keep-alive) per supplier origin. An attempt is
// made here, on the event loop, unless the caller hands in a Transport: then a
// pool thread makes it and reads the reply (embeddings, images), and only what
// came of it crosses back; the route order, failover and breaker stay here.
import type { CallAbort } from './abort.js';
import { CredentialPolicy } from '../catalog/credentials.js';
import type { ProtocolCode, Route } from '../catalog/types.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { Logger } from '../log/logger.js';
import type { Metrics } from '../metrics/registry.js';
import type { CallTrace } from '../metrics/tracing.js';
import { CircuitBreaker } from './breaker.js';
import { SupplierConnections, type ConnectionSettings } from './connections.js';
import { classify, type FailureKind } from './failures.js';
import type { ReplyBody } from './reply-body.js';
import { RouteTargets, type Target } from './targets.js';
import { REFUSED } from './wire.js';

export interface DispatchSettings extends ConnectionSettings {
  breakerThreshold: number;
  breakerCooldownMs: number;
  /** suppliers.credential_env_allow: variables a credential may come from besides TOLLGATE_SUPPLIER_*. */
  credentialEnvAllow: readonly string[];
  /** Largest unary reply read (suppliers.max_reply_bytes). */
  maxReplyBytes: number;
  /** Largest event, or unterminated line, of a stream (suppliers.max_event_bytes). */
  maxEventBytes: number;
}

/**
 * A reply read whole where it was received, never crossing the event loop as
 * bytes: `whole` with the surface's decoded reply (`ok` false: not the
 * protocol's reply; not decoded at all past a 4xx), `too_large` past
 * suppliers.max_reply_bytes, or `broken` (the body failed or stalled midway).
 */
export type ReadReply = { read: 'whole'; ok: boolean; decoded: unknown } | { read: 'too_large'; limit: number } | { read: 'broken' };

/** What an attempt got back once its headers arrived. */
export interface Answered {
  statusCode: number;
  contentType: string;
  /** The body to read; null when the transport read it whole itself (`read`). */
  body: ReplyBody | null;
  /** What came of reading the body, when the transport did (a pool thread: workers/fetch-reply.ts); null otherwise. */
  read: ReadReply | null;
}

/** The reply the call goes on with, and the route that gave it. */
export interface UpstreamReply extends Answered {
  route: Route;
  /** Routes tried to get this reply, this one included (more than 1: failover). */
  attempts: number;
}

/**
 * How an attempt reaches a route, when not on this thread with undici (the
 * default): a pool thread that makes the request and reads and decodes the
 * reply itself (OffloadPool.fetchReply). A 429 or 5xx comes back with its body
 * already dropped; a connect error or timeout is thrown as AttemptFailed.
 */
export type Transport = (target: Target, body: string, abort: CallAbort, settings: DispatchSettings) => Promise<Answered>;

/** What a traced call's attempts report (metrics/tracing.ts). */
export type AttemptTrace = Pick<CallTrace, 'attemptStart' | 'attemptEnd'>;

export class SupplierDispatcher {
  private readonly connections: SupplierConnections;
  private readonly breaker: CircuitBreaker;
  private readonly credentials: CredentialPolicy;
  /** Each route's URL, headers and credential, computed once per catalog revision. */
  private readonly targets: RouteTargets;
  /** Suppliers whose refused credential was already logged (once each, not per call). */
  private readonly refusedLogged = new Set<string>();

  constructor(
    private readonly settings: DispatchSettings,
    private readonly logger: Logger,
    private readonly metrics: Metrics,
  ) {
    this.connections = new SupplierConnections(settings);
    this.breaker = new CircuitBreaker(settings.breakerThreshold, settings.breakerCooldownMs, logger);
    metrics.addGauges(() => this.breaker.gauges());
    metrics.count('supplier_failovers', 0);
    this.credentials = new CredentialPolicy(settings.credentialEnvAllow);
    this.targets = new RouteTargets(this.credentials);
  }

  /** Whether this worker's circuit for a supplier is open now (the operator's catalog screen). */
  circuitOpen(supplierId: string): boolean {
    return this.breaker.isOpen(supplierId, Date.now());
  }

  /** Routes to try, in order: open circuits go last rather than nowhere. */
  private order(routes: Route[]): Route[] {
    const now = Date.now();
    const closed = routes.filter((r) => !this.breaker.isOpen(r.supplier.id, now));
    return closed.length === routes.length ? routes : [...closed, ...routes.filter((r) => this.breaker.isOpen(r.supplier.id, now))];
  }

  /**
   * Returns the first acceptable reply (2xx, or a 4xx the supplier meant for
   * the request). Throws GatewayError when every route failed.
   */
  async send(
    protocol: ProtocolCode,
    routes: Route[],
    bodyFor: (route: Route) => string,
    abort: CallAbort,
    tried: ReadonlySet<Route> | null = null,
    transport: Transport | null = null,
    trace: AttemptTrace | null = null,
  ): Promise<UpstreamReply> {
    const kinds: FailureKind[] = [];
    for (const route of this.order(routes)) {
      // Routes whose 2xx reply was unusable on an earlier turn of this call (pipeline/run.ts).
      if (tried?.has(route)) continue;
      const supplier = route.supplier;
      const target = this.targets.of(route, protocol);
      if (target === REFUSED) {
        this.refusedCredential(supplier.name, supplier.credentialEnv!);
        kinds.push('credential');
        continue;
      }
      // Traced: the attempt's span, and its traceparent sent on (to a pool thread's attempt among the target's headers).
      const traceparent = trace === null ? null : trace.attemptStart(supplier.name, route.upstreamModel);
      try {
        const res: UpstreamReply =
          transport === null
            ? await this.request(route, target, bodyFor(route), abort, traceparent)
            : { route, attempts: 1, ...(await transport(traceparent === null ? target : { ...target, headers: { ...target.headers, traceparent } }, bodyFor(route), abort, this.settings)) };
        if (res.statusCode === 429 || res.statusCode === 529 || res.statusCode >= 500) {
          const kind: FailureKind = res.statusCode >= 500 && res.statusCode !== 503 && res.statusCode !== 529 ? 'server' : 'overloaded';
          trace?.attemptEnd(res.statusCode, kind);
          await res.body?.dump();
          this.failed(supplier.id, supplier.name, kind, res.statusCode);
          kinds.push(kind);
          continue;
        }
        trace?.attemptEnd(res.statusCode, null);
        this.breaker.success(supplier.id);
        res.attempts = kinds.length + 1;
        if (kinds.length > 0) this.metrics.count('supplier_failovers');
        return res;
      } catch (err) {
        const kind = classify(err);
        trace?.attemptEnd(0, abort.aborted ? 'aborted' : (kind ?? 'error'));
        if (abort.aborted) throw err;
        if (kind === null) throw err;
        this.failed(supplier.id, supplier.name, kind, 0);
        kinds.push(kind);
      }
    }
    if (kinds.length > 0 && kinds.every((k) => k === 'overloaded')) throw new GatewayError('upstream_overloaded');
    if (kinds.length > 0 && kinds.every((k) => k === 'timeout')) throw new GatewayError('upstream_timeout');
    throw new GatewayError('upstream_error');
  }

  /** One attempt on this thread: undici, keep-alive per origin; the body is the caller's to read. */
  private async request(route: Route, target: Target, body: string, abort: CallAbort, traceparent: string | null): Promise<UpstreamReply> {
    const head = await this.connections.send(target, body, abort, traceparent);
    return { route, attempts: 1, statusCode: head.statusCode, contentType: head.contentType, body: head.body, read: null };
  }

  /** A stored catalog names a variable the policy refuses: the route is skipped, nothing is sent. */
  private refusedCredential(name: string, env: string): void {
    this.metrics.supplierError(name, 'credential');
    if (this.refusedLogged.has(name)) return;
    this.refusedLogged.add(name);
    this.logger.error({ supplier: name }, `${this.credentials.refusal(name, env)}; its routes are skipped until the catalog is fixed`);
  }

  get maxReplyBytes(): number {
    return this.settings.maxReplyBytes;
  }

  get maxEventBytes(): number {
    return this.settings.maxEventBytes;
  }

  /**
   * A reply over its size bound: counted and logged, but neither retried on
   * the next route nor fed to the breaker. The supplier has already done (and
   * billed) the work, so a retry would pay for it again; and if a request
   * could draw such a reply, counting it would let one caller open a
   * supplier's circuit for everyone.
   */
  replyTooLarge(route: Route, limit: number): void {
    this.metrics.supplierError(route.supplier.name, 'oversize');
    this.logger.warn({ supplier: route.supplier.name, limit }, 'supplier reply over its size bound; call failed');
  }

  /**
   * A 2xx whose body is not the protocol's reply (not JSON, an error object):
   * a supplier failure found after the reply was read. Fed to the breaker
   * like a 5xx; the pipeline tries the next route, since nothing has reached
   * the client yet.
   */
  unusableReply(route: Route): void {
    this.failed(route.supplier.id, route.supplier.name, 'server', 200);
  }

  private failed(id: string, name: string, kind: FailureKind, status: number): void {
    this.breaker.failure(id);
    this.metrics.supplierError(name, kind);
    this.logger.warn({ supplier: name, kind, status }, 'supplier attempt failed; trying the next route');
  }

  async close(): Promise<void> {
    await this.connections.close();
  }
}
