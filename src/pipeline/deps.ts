// Everything a model call needs from its worker, built once at start.
import type { Authenticator } from '../auth/types.js';
import type { Billing } from '../billing/types.js';
import type { CatalogHolder } from '../catalog/holder.js';
import type { Logger } from '../log/logger.js';
import type { Metrics } from '../metrics/registry.js';
import type { Tracer } from '../metrics/tracing.js';
import type { SupplierDispatcher } from '../suppliers/dispatch.js';
import type { OffloadPool } from '../offload/pool.js';
import type { SurfaceServices } from '../surfaces/surface.js';
import type { KeySlots } from './key-slots.js';
import type { LocalQuota } from './local-quota.js';

export interface PipelineDeps {
  authenticator: Authenticator;
  catalog: CatalogHolder;
  billing: Billing;
  suppliers: SupplierDispatcher;
  offload: OffloadPool;
  /** Bodies larger than this are parsed and prepared in the pool (pools.offload_body_bytes). */
  offloadBodyBytes: number;
  /** A stream whose client stays behind this long is cancelled (http.stalled_client_ms). */
  stalledClientMs: number;
  /** Bodies nest at most this deep (http.max_json_depth). */
  maxJsonDepth: number;
  /** The per-key concurrency cap of this worker (billing.max_concurrent_per_key). */
  keySlots: KeySlots;
  /** Local operations' own per-organization quota (billing.count_tokens_per_second / _per_minute). */
  localQuota: LocalQuota;
  logger: Logger;
  /** Tokens and money per model, surface and outcome, counted from each settled usage row (settle.ts). */
  metrics: Metrics;
  /** OpenTelemetry traces (tracing.otlp_url); null when off, the one check a call pays then. */
  tracer: Tracer | null;
  /** What surfaces' asynchronous stages use (responses: the response-id owners). */
  services: SurfaceServices;
}
