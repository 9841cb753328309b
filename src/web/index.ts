// The web side's routes: the public catalog page, its static assets and the
// console pages. Registered by the worker in one line; the console's REST
// routes (sessions, accounts) live beside the other console routes.
import type { CatalogHolder } from '../catalog/holder.js';
import type { Route } from '../server/context.js';
import { assetRoute, loadAssets } from './assets.js';
import { landingRoute } from './landing.js';
import { consolePageRoutes } from './console-page.js';

export function webRoutes(catalog: CatalogHolder, currency: string): Route[] {
  // Read and compressed once per worker at start.
  const assets = loadAssets();
  return [landingRoute(catalog, assets, currency), assetRoute(assets), ...consolePageRoutes(assets, currency)];
}
