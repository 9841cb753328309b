// GET /console/v1/catalog (operator): the published catalog as this worker
// serves it — suppliers, each model's routes in priority order, and the
// circuit state this worker sees for each supplier. Read-only: the catalog
// is changed with `tollgate catalog apply`.
import type { CatalogHolder } from '../catalog/holder.js';
import type { Route } from '../server/context.js';
import { consoleRouteKit, type ConsoleAuth } from './admin.js';

export function catalogConsoleRoutes(auth: ConsoleAuth, catalog: CatalogHolder, circuitOpen: (supplierId: string) => boolean): Route[] {
  const { route, answer } = consoleRouteKit(auth);
  return [
    route('get', '/console/v1/catalog', false, async (ctx) => {
      const snap = catalog.snapshot;
      const suppliers = new Map<string, Record<string, unknown>>();
      const models: Array<Record<string, unknown>> = [];
      for (const [name, m] of snap.byName) {
        if (name !== m.canonicalName) continue;
        const routes: Array<Record<string, unknown>> = [];
        for (const [protocol, { routes: rs }] of m.protocols) {
          for (const r of rs) {
            const s = r.supplier;
            suppliers.set(s.id, { id: s.id, name: s.name, wire_protocol: s.wireProtocol, base_url: s.baseUrl, protocols: s.protocols, credential_env: s.credentialEnv });
            routes.push({ protocol, supplier: s.name, wire_protocol: s.wireProtocol, upstream_model: r.upstreamModel, priority: r.priority, circuit: circuitOpen(s.id) ? 'open' : 'closed' });
          }
        }
        models.push({ id: m.canonicalName, model_id: m.modelId, routes });
      }
      answer(ctx, 200, { object: 'catalog', revision: snap.revision, loaded_at: snap.loadedAt, stale: snap.stale, suppliers: [...suppliers.values()], models });
    }, { operatorOnly: true }),
  ];
}
