// The operator's key routes under /console/v1 (registered only when
// ADMIN_TOKEN is set). Every route checks the admin token first; errors use
// the service's REST envelope; answers are never cacheable (one carries a
// secret, all name credentials).
import type { ChangeBus } from '../bus/bus.js';
import { consoleKey } from '../auth/key-view.js';
import type { Route } from '../server/context.js';
import type { Pool } from '../store/pool.js';
import { consoleRouteKit, REPLAYED } from './admin.js';
import { KeyService } from './key-service.js';

export interface KeyConsoleDeps {
  pool: Pool;
  bus: ChangeBus;
  adminToken: string;
  /**
   * Brings this worker's key index up to date. Awaited before answering, so a
   * key works the moment its creation is answered on this worker; the others
   * learn of it through the bus within milliseconds.
   */
  catchUp(): Promise<void>;
}


export function keyConsoleRoutes(deps: KeyConsoleDeps): Route[] {
  const { route, answer } = consoleRouteKit(deps.adminToken);
  const keys = new KeyService(deps.pool, async (keyId) => {
    await deps.bus.publish('keys', keyId);
    await deps.catchUp();
  });

  return [
    route('post', '/console/v1/organizations/:org_id/keys', true, async (ctx) => {
      const { row, secret, replay } = await keys.create(ctx.params[0], ctx.body, ctx.idempotencyKey);
      ctx.orgId = row.org_id;
      ctx.keyId = row.id;
      // A repeat of the same creation answers the metadata only: a lost secret is replaced, never recovered.
      if (replay) answer(ctx, 200, consoleKey(row), REPLAYED);
      else answer(ctx, 201, { ...consoleKey(row), secret });
    }),
    route('get', '/console/v1/organizations/:org_id/keys', false, async (ctx) => {
      const rows = await keys.list(ctx.params[0]);
      const now = Date.now();
      answer(ctx, 200, { object: 'list', data: rows.map((r) => consoleKey(r, now)) });
    }),
    route('get', '/console/v1/keys/:key_id', false, async (ctx) => {
      answer(ctx, 200, consoleKey(await keys.get(ctx.params[0])));
    }),
    route('patch', '/console/v1/keys/:key_id', true, async (ctx) => {
      const row = await keys.edit(ctx.params[0], ctx.body);
      ctx.orgId = row.org_id;
      ctx.keyId = row.id;
      answer(ctx, 200, consoleKey(row));
    }),
    route('post', '/console/v1/keys/:key_id/revoke', false, async (ctx) => {
      const row = await keys.revoke(ctx.params[0]);
      ctx.orgId = row.org_id;
      ctx.keyId = row.id;
      answer(ctx, 200, consoleKey(row));
    }),
  ];
}
