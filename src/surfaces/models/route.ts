// GET /v1/models and GET /v1/models/{id}: open, answered from the worker's
// pre-rendered catalog bodies (no database query). The whole list, the
// common call, is the body rendered once per revision, with an ETag; a page
// (Anthropic's clients ask with limit, after_id, before_id) is cut from the
// same objects. One model's object, by canonical name or alias, is the
// object of the list (issue 31 item 7, issue 34 item 8).
import type { CatalogHolder } from '../../catalog/holder.js';
import { listJson, type CatalogSnapshot } from '../../catalog/snapshot.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { Route } from '../../server/context.js';
import { send, sendJson } from '../../server/respond.js';

/** The largest page a caller may ask for. */
export const MODELS_MAX_LIMIT = 1000;

export function modelsRoute(catalog: CatalogHolder): Route {
  return {
    method: 'get',
    path: '/v1/models',
    surface: 'models',
    envelope: 'rest',
    readsBody: false,
    // No header is read: naming the list makes the server copy the query string.
    headers: [],
    handle(ctx) {
      const snap = catalog.snapshot;
      if (ctx.query !== '') {
        sendJson(ctx, 200, pageBody(snap, readPage(ctx.query)));
        return;
      }
      const headers = [['ETag', snap.etag], ['Cache-Control', 'no-cache']] as const;
      if (ctx.ifNoneMatch !== '' && ctx.ifNoneMatch.split(',').some((t) => t.trim() === snap.etag)) {
        send(ctx, 304, null, '', headers);
        return;
      }
      sendJson(ctx, 200, snap.listBody, headers);
    },
  };
}

export function modelObjectRoute(catalog: CatalogHolder): Route {
  return {
    method: 'get',
    path: '/v1/models/:id',
    surface: 'models',
    envelope: 'rest',
    readsBody: false,
    handle(ctx) {
      const body = catalog.snapshot.modelBodies.get(ctx.params[0]!);
      if (body === undefined) throw new GatewayError('model_not_found', { param: 'model' });
      sendJson(ctx, 200, body);
    },
  };
}

interface Page {
  limit: number | null;
  afterId: string | null;
  beforeId: string | null;
}

function refuse(param: string): GatewayError {
  return new GatewayError('invalid_request', { param });
}

/** limit, after_id and before_id, each at most once; other parameters are ignored (clients add their own). */
function readPage(query: string): Page {
  const page: Page = { limit: null, afterId: null, beforeId: null };
  const seen = new Set<string>();
  for (const pair of query.split('&')) {
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    if (name !== 'limit' && name !== 'after_id' && name !== 'before_id') continue;
    if (seen.has(name)) throw refuse(name);
    seen.add(name);
    let value: string;
    try {
      value = decodeURIComponent(pair.slice(eq + 1).replaceAll('+', ' '));
    } catch {
      throw refuse(name);
    }
    if (eq < 0 || value.length === 0 || value.length > 256) throw refuse(name);
    if (name === 'limit') {
      if (!/^[1-9][0-9]{0,3}$/.test(value) || Number(value) > MODELS_MAX_LIMIT) throw refuse('limit');
      page.limit = Number(value);
    } else if (name === 'after_id') page.afterId = value;
    else page.beforeId = value;
  }
  if (page.afterId !== null && page.beforeId !== null) throw refuse('before_id');
  return page;
}

/** The models after `after_id` (or before `before_id`), at most `limit`; has_more when the list goes on past the page. */
function pageBody(snap: CatalogSnapshot, page: Page): string {
  const all = snap.stale ? [] : snap.publicModels;
  const at = (id: string, param: string): number => {
    const i = all.findIndex((m) => m.id === id);
    if (i < 0) throw refuse(param);
    return i;
  };
  let from = 0;
  let to = all.length;
  if (page.afterId !== null) from = at(page.afterId, 'after_id') + 1;
  if (page.beforeId !== null) to = at(page.beforeId, 'before_id');
  const limit = page.limit ?? all.length;
  // Before an id, the page is the `limit` models just before it.
  if (page.beforeId !== null) from = Math.max(from, to - limit);
  else to = Math.min(to, from + limit);
  const hasMore = page.beforeId !== null ? from > 0 : to < all.length;
  return listJson(snap.revision, snap.loadedAt, snap.stale, all.slice(from, to), hasMore);
}
