// GET /console: the console's one HTML page (the script draws every screen
// from the console REST API). The page holds no data, so it is the same for
// everyone and cached by its ETag; what a person sees is decided by the API.
import type { Route } from '../server/context.js';
import { send } from '../server/respond.js';
import type { AssetSet } from './assets.js';
import { encodeBody, notModified, pickEncoding } from './encoded.js';
import { PAGE_HEADERS, pageShell } from './html.js';

export function consolePageRoutes(assets: AssetSet): Route[] {
  const page = encodeBody(
    'text/html; charset=utf-8',
    pageShell({
      lang: 'en',
      title: 'Tollgate console',
      page: 'console',
      assets,
      body:
        '<header class="site"><div class="brand"><a href="/" class="logo">Tollgate</a> <span class="tagline">console</span></div>' +
        '<nav class="console-nav" id="nav" aria-label="Console"></nav><div class="tools" id="who"></div></header>' +
        '<main id="main"><p>Loading…</p><noscript>The console needs JavaScript.</noscript></main>' +
        '<div id="live" class="visually-hidden" aria-live="polite"></div>',
    }),
  );
  const route = (path: string): Route => ({
    method: 'get',
    path,
    surface: 'web',
    envelope: 'rest',
    readsBody: false,
    headers: ['accept-encoding'],
    handle(ctx) {
      const headers: Array<readonly [string, string]> = [...PAGE_HEADERS, ['ETag', page.etag], ['Cache-Control', 'no-cache'], ['Vary', 'Accept-Encoding']];
      if (notModified(ctx.ifNoneMatch, page.etag)) {
        send(ctx, 304, null, '', headers);
        return;
      }
      const { coding, bytes } = pickEncoding(page, ctx.headers[0]);
      if (coding !== null) headers.push(['Content-Encoding', coding]);
      send(ctx, 200, page.type, bytes, headers);
    },
  });
  return [route('/console'), route('/console/')];
}
