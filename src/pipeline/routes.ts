// The server routes of every surface, derived from the registry
// (surfaces/index.ts): a model call's route, a local operation's, and the
// paths the spec names under a surface's prefix but the gateway does not
// serve (404 in that surface's envelope). GET /v1/models and GET /v1/key
// answer from the worker's own state and are routed beside the list.
import type { KeyAuthenticator } from '../auth/authenticator.js';
import type { CatalogHolder } from '../catalog/holder.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { Route } from '../server/context.js';
import { SURFACES, type ModelCallEntry } from '../surfaces/index.js';
import { keyRoute } from '../surfaces/key/route.js';
import { modelsRoute } from '../surfaces/models/route.js';
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

export function surfaceRoutes(deps: PipelineDeps, catalog: CatalogHolder, keys: KeyAuthenticator): Route[] {
  const routes: Route[] = [modelsRoute(catalog), keyRoute(keys)];
  for (const entry of SURFACES) {
    if (entry.role === 'local') routes.push(localRoute(entry, deps));
    else routes.push(modelRoute(entry, deps), ...unservedRoutes(entry));
  }
  return routes;
}
