// The front end's static files, built by `npm run build` (tsc -p web → 
// dist/web/app.js; web/static/ as written), read into memory once when a
// worker starts, named by a hash of their content and compressed once. Served
// at /assets/<name>.<hash>.<ext> with a year-long immutable Cache-Control: a
// new build changes the name, so a browser never needs to ask again.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../config/paths.js';
import type { Route } from '../server/context.js';
import { send } from '../server/respond.js';
import { encodeBody, notModified, pickEncoding, type Encoded } from './encoded.js';

const TYPES: Record<string, string> = {
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
};

/** Source files of the assets, by their logical name. */
const SOURCES: ReadonlyArray<readonly [string, string]> = [
  ['app.js', 'dist/web/app.js'],
  ['app.css', 'web/static/app.css'],
  ['icon.svg', 'web/static/icon.svg'],
];

export interface AssetSet {
  /** The URL of a logical asset name (e.g. app.js → /assets/app.3f2a….js). */
  url(name: string): string;
  byFile: Map<string, Encoded>;
}

export function loadAssets(root = packageRoot): AssetSet {
  const urls = new Map<string, string>();
  const byFile = new Map<string, Encoded>();
  for (const [name, path] of SOURCES) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(join(root, path));
    } catch {
      throw new Error(`web asset ${path} is missing: run npm run build`);
    }
    const dot = name.lastIndexOf('.');
    const ext = name.slice(dot + 1);
    const hash = createHash('sha256').update(bytes).digest('hex').slice(0, 12);
    const file = `${name.slice(0, dot)}.${hash}.${ext}`;
    urls.set(name, `/assets/${file}`);
    byFile.set(file, encodeBody(TYPES[ext], bytes));
  }
  return {
    byFile,
    url(name) {
      const url = urls.get(name);
      if (url === undefined) throw new Error(`no web asset named ${name}`);
      return url;
    },
  };
}

const IMMUTABLE = 'public, max-age=31536000, immutable';

export function assetRoute(assets: AssetSet): Route {
  return {
    method: 'get',
    path: '/assets/:file',
    surface: 'web',
    envelope: 'rest',
    readsBody: false,
    headers: ['accept-encoding'],
    handle(ctx) {
      const asset = assets.byFile.get(ctx.params[0]);
      if (asset === undefined) {
        send(ctx, 404, 'text/plain; charset=utf-8', 'not found\n', [['Cache-Control', 'no-store'], ['X-Content-Type-Options', 'nosniff']]);
        return;
      }
      const common: Array<[string, string]> = [
        ['ETag', asset.etag],
        ['Cache-Control', IMMUTABLE],
        ['Vary', 'Accept-Encoding'],
        ['X-Content-Type-Options', 'nosniff'],
      ];
      if (notModified(ctx.ifNoneMatch, asset.etag)) {
        send(ctx, 304, null, '', common);
        return;
      }
      const { coding, bytes } = pickEncoding(asset, ctx.headers[0]);
      if (coding !== null) common.push(['Content-Encoding', coding]);
      send(ctx, 200, asset.type, bytes, common);
    },
  };
}
