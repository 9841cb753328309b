// The front end's static files, built by `npm run build` (tsc -p web →
// dist/web/app.js; web/static/ as written), read into memory once when a
// worker starts and named by a hash of their content. Served at
// /assets/<name>.<hash>.<ext> with a year-long immutable Cache-Control: a
// new build changes the name, so a browser never needs to ask again.
//
// Their gzip and brotli forms are made once by the build's last step
// (precompress.ts) into ENCODED_DIR, named by the same hash: compressing them
// took each worker ~0.1 s of CPU at every start, a replacement after a
// crash included. A worker checks that they decompress to the very bytes it
// read; when they are missing (a build by tsc alone) or do not, it
// compresses them itself, as it used to.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../config/paths.js';
import type { Route } from '../server/context.js';
import { send } from '../server/respond.js';
import { encodeBody, encodedFrom, notModified, pickEncoding, type Encoded } from './encoded.js';

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

/** Where the build leaves `<file>.gz` and `<file>.br` for each asset, `<file>` being its hashed name. */
export const ENCODED_DIR = 'dist/web/encoded';

interface AssetSource {
  name: string;
  /** e.g. app.3f2a….js */
  file: string;
  type: string;
  bytes: Buffer;
}

function readSources(root: string): AssetSource[] {
  return SOURCES.map(([name, path]) => {
    let bytes: Buffer;
    try {
      bytes = readFileSync(join(root, path));
    } catch {
      throw new Error(`web asset ${path} is missing: run npm run build`);
    }
    const dot = name.lastIndexOf('.');
    const ext = name.slice(dot + 1);
    const hash = createHash('sha256').update(bytes).digest('hex').slice(0, 12);
    return { name, file: `${name.slice(0, dot)}.${hash}.${ext}`, type: TYPES[ext], bytes };
  });
}

export interface AssetSet {
  /** The URL of a logical asset name (e.g. app.js → /assets/app.3f2a….js). */
  url(name: string): string;
  byFile: Map<string, Encoded>;
}

export function loadAssets(root = packageRoot): AssetSet {
  const urls = new Map<string, string>();
  const byFile = new Map<string, Encoded>();
  for (const a of readSources(root)) {
    urls.set(a.name, `/assets/${a.file}`);
    byFile.set(a.file, builtEncoding(root, a) ?? encodeBody(a.type, a.bytes));
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

/** The build's compressed forms of exactly these bytes; null when they are missing or damaged. */
function builtEncoding(root: string, a: AssetSource): Encoded | null {
  const at = join(root, ENCODED_DIR, a.file);
  try {
    return encodedFrom(a.type, a.bytes, readFileSync(`${at}.gz`), readFileSync(`${at}.br`));
  } catch {
    return null;
  }
}

/**
 * The build's step (precompress.ts): every asset's compressed forms written
 * to ENCODED_DIR, each file whole or not at all (written aside, then
 * renamed), and those of earlier builds removed. Returns the files written.
 */
export function writeEncodedAssets(root = packageRoot): string[] {
  const dir = join(root, ENCODED_DIR);
  mkdirSync(dir, { recursive: true });
  const written: string[] = [];
  for (const a of readSources(root)) {
    const e = encodeBody(a.type, a.bytes);
    for (const [ext, bytes] of [['gz', e.gzip], ['br', e.br]] as const) {
      const name = `${a.file}.${ext}`;
      const aside = join(dir, `${name}.${process.pid}.tmp`);
      writeFileSync(aside, bytes);
      renameSync(aside, join(dir, name));
      written.push(name);
    }
  }
  for (const f of readdirSync(dir)) if (!written.includes(f)) rmSync(join(dir, f), { force: true });
  return written;
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
