// The server routes of every surface, derived from the registry
// (surfaces/index.ts): a model call's route, a local operation's, and the
// paths the spec names under a surface's prefix but the gateway does not
// serve (404 in that surface's envelope). GET /v1/models and GET /v1/key
// answer from the worker's own state and are routed beside the list.
// Every model call and local operation checks its key against the in-memory
// key index before its body is read (keyCheck).
import type { KeyAuthenticator } from '../auth/authenticator.js';
import type { Authenticator, Carrier } from '../auth/types.js';
import type { CatalogHolder } from '../catalog/holder.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { RequestContext, Route } from '../server/context.js';
import { SURFACES, type ModelCallEntry } from '../surfaces/index.js';
import { keyRoute } from '../surfaces/key/route.js';
import { modelObjectRoute, modelsRoute } from '../surfaces/models/route.js';
import type { PipelineDeps } from './deps.js';
import { localRoute } from './local.js';
import { modelRoute } from './run.js';

/** Unserved paths answer before any body is read or key looked at, as a path that does not exist. */
function unservedRoutes(entry: ModelCallEntry): Route[] {
  return (entry.unserved ?? []).map((path) => ({
    method: 'post',
    path,
    surface: entry.name,
    envelope: entry.surface.envelope,
    readsBody: false,
    handle: () => {
      throw new GatewayError('not_found');
    },
  }));
}

/**
 * The server's header check for a route that takes an API key: a key the
 * in-memory index does not hold live is refused (the surface's 401, the
 * connection closed) before a byte of the body is read, so an unknown key
 * cannot make the worker buffer megabytes (issue 30 item 3). No database
 * query; the hash is kept for authenticate(), which finishes the check.
 */
function keyCheck(authenticator: Authenticator, carrier: Carrier): (ctx: RequestContext) => void {
  return (ctx) => {
    const hash = authenticator.precheck(ctx.authorization, ctx.xApiKey, carrier);
    if (hash === null) throw new GatewayError('invalid_api_key');
    ctx.keyHash = hash;
  };
}

export function surfaceRoutes(deps: PipelineDeps, catalog: CatalogHolder, keys: KeyAuthenticator): Route[] {
  const routes: Route[] = [modelsRoute(catalog), modelObjectRoute(catalog), keyRoute(keys)];
  for (const entry of SURFACES) {
    if (entry.role === 'local') routes.push({ ...localRoute(entry, deps), authorize: keyCheck(deps.authenticator, entry.operation.carrier) });
    else routes.push({ ...modelRoute(entry, deps), authorize: keyCheck(deps.authenticator, entry.surface.carrier) }, ...unservedRoutes(entry));
  }
  return routes;
}
