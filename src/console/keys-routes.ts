// Key routes under /console/v1, for the operator (any organization) and for
// an organization's signed-in people (their own organization only: another
// organization's key answers 404, as if it did not exist). Errors use the
// service's REST envelope; answers are never cacheable (one carries a secret,
// all name credentials).
import { consoleKey } from '../auth/key-view.js';
import type { Route } from '../server/context.js';
import type { Pool } from '../store/pool.js';
import { consoleRouteKit, ownOrg, REPLAYED, type ConsoleAuth } from './admin.js';
import { KeyService } from './key-service.js';
import { decodeCursor, encodeCursor, isCursor, isLimit, limitOf, readQuery, UUID_ID } from './query.js';

export interface KeyConsoleDeps {
  pool: Pool;
  auth: ConsoleAuth;
  /**
   * Brings every worker's key index of this instance up to date (through the
   * primary). Awaited before answering, so a key works, and a revoked key is
   * refused, on every worker the moment the change is answered; other
   * instances learn of it through the bus within milliseconds.
   */
  catchUp(): Promise<void>;
}

export function keyConsoleRoutes(deps: KeyConsoleDeps): Route[] {
  const { route, answer } = consoleRouteKit(deps.auth);
  // Other workers and instances are told by the store itself, at commit (migration 011): here, only the wait for this instance's workers.
  const keys = new KeyService(deps.pool, () => deps.catchUp());
  /** The key, if the caller may see it. */
  const visibleKey = async (keyId: string, who: Parameters<typeof ownOrg>[0]) => {
    const row = await keys.get(keyId);
    ownOrg(who, row.org_id, 'key_not_found');
    return row;
  };

  return [
    route('post', '/console/v1/organizations/:org_id/keys', true, async (ctx, who) => {
      ownOrg(who, ctx.params[0]);
      const { row, secret, replay } = await keys.create(ctx.params[0], ctx.body, ctx.idempotencyKey);
      ctx.orgId = row.org_id;
      ctx.keyId = row.id;
      // A repeat of the same creation answers the metadata only: a lost secret is replaced, never recovered.
      if (replay) answer(ctx, 200, consoleKey(row), REPLAYED);
      else answer(ctx, 201, { ...consoleKey(row), secret });
    }),
    route('get', '/console/v1/organizations/:org_id/keys', false, async (ctx, who) => {
      ownOrg(who, ctx.params[0]);
      const q = readQuery(ctx.query, { limit: isLimit, cursor: isCursor });
      const limit = limitOf(q);
      const after = decodeCursor(q, UUID_ID);
      // An organization has few keys: ordered in SQL, the page is cut here.
      let rows = await keys.list(ctx.params[0]);
      if (after !== null) {
        const at = Date.parse(after.at);
        rows = rows.filter((r) => r.created_at.getTime() > at || (r.created_at.getTime() === at && r.id > after.id));
      }
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      const now = Date.now();
      answer(ctx, 200, {
        object: 'list',
        data: page.map((r) => consoleKey(r, now)),
        has_more: rows.length > limit,
        next_cursor: rows.length > limit && last !== undefined ? encodeCursor(last.created_at, last.id) : null,
      });
    }),
    route('get', '/console/v1/keys/:key_id', false, async (ctx, who) => {
      answer(ctx, 200, consoleKey(await visibleKey(ctx.params[0], who)));
    }),
    route('patch', '/console/v1/keys/:key_id', true, async (ctx, who) => {
      await visibleKey(ctx.params[0], who);
      const row = await keys.edit(ctx.params[0], ctx.body);
      ctx.orgId = row.org_id;
      ctx.keyId = row.id;
      answer(ctx, 200, consoleKey(row));
    }),
    route('post', '/console/v1/keys/:key_id/revoke', false, async (ctx, who) => {
      await visibleKey(ctx.params[0], who);
      const row = await keys.revoke(ctx.params[0]);
      ctx.orgId = row.org_id;
      ctx.keyId = row.id;
      answer(ctx, 200, consoleKey(row));
    }),
  ];
}
