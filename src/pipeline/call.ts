// One model call's state, every field set in the constructor (fixed shape).
// Stages fill it in order; settlement reads it.
import type { ApiKey } from '../auth/types.js';
import type { Hold } from '../billing/types.js';
import type { CatalogModel } from '../catalog/types.js';
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

  constructor(
    readonly ctx: RequestContext,
    /** The surface's registry name (surfaces/index.ts): what the pool looks it up by. */
    readonly name: string,
    readonly surface: ModelSurface,
    readonly deps: PipelineDeps,
  ) {
    ctx.onAbort = () => this.abort.abort();
  }

  info(): CallInfo {
    return { requestId: this.ctx.requestId, model: this.prepared!.decoded.model, created: this.created, orgId: this.key!.orgId };
  }
}
