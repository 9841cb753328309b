// GET /v1/models: open, answered from the worker's pre-rendered catalog body
// (no database query, no serialization per request), with an ETag.
import type { CatalogHolder } from '../../catalog/holder.js';
import type { Route } from '../../server/context.js';
import { send, sendJson } from '../../server/respond.js';

export function modelsRoute(catalog: CatalogHolder): Route {
  return {
    method: 'get',
    path: '/v1/models',
    surface: 'models',
    envelope: 'rest',
    readsBody: false,
    handle(ctx) {
      const snap = catalog.snapshot;
      const headers = [['ETag', snap.etag], ['Cache-Control', 'no-cache']] as const;
      if (ctx.ifNoneMatch !== '' && ctx.ifNoneMatch.split(',').some((t) => t.trim() === snap.etag)) {
        send(ctx, 304, null, '', headers);
        return;
      }
      sendJson(ctx, 200, snap.listBody, headers);
    },
  };
}
