// One model call's state, every field set in the constructor (fixed shape).
// Stages fill it in order; settlement reads it.
import type { ApiKey } from '../auth/types.js';
import type { Hold } from '../billing/types.js';
import type { CatalogModel } from '../catalog/types.js';
import type { RequestContext } from '../server/context.js';
import type { CallInfo, Decoded, SurfaceCodec } from '../surfaces/surface.js';
import type { PipelineDeps } from './deps.js';

export class ModelCall {
  /** Aborted when the client goes away: cancels the upstream request. */
  readonly abort = new AbortController();
  readonly created = Math.floor(Date.now() / 1000);
  key: ApiKey | null = null;
  decoded: Decoded | null = null;
  model: CatalogModel | null = null;
  hold: Hold | null = null;
  /** Name of the supplier that answered. */
  supplier: string | null = null;
  /** ms from request start to the first byte sent, for the usage row. */
  firstByteMs: number | null = null;
  settled = false;

  constructor(
    readonly ctx: RequestContext,
    readonly surface: SurfaceCodec,
    readonly deps: PipelineDeps,
  ) {
    ctx.onAbort = () => this.abort.abort();
  }

  get body(): Record<string, any> {
    return this.ctx.body as Record<string, any>;
  }

  info(): CallInfo {
    return { requestId: this.ctx.requestId, model: this.decoded!.model, created: this.created };
  }
}
