// What every HTML page of the web side shares: escaping, the security
// headers (a CSP that allows no inline script and no other origin), and the
// page shell that links the content-hashed assets.
import type { Route } from '../server/context.js';
import { send } from '../server/respond.js';
import type { AssetSet } from './assets.js';
import { notModified, pickEncoding, type Encoded } from './encoded.js';
import { chooseLang, type Lang } from './landing-text.js';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function esc(text: unknown): string {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/**
 * Only this origin's scripts, styles, images and fetches; no inline script,
 * no framing, no plugins, forms post only here. Banners are inline SVG
 * elements (markup, not script), so they need nothing more.
 */
export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

export const PAGE_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ['Content-Security-Policy', CSP],
  ['X-Content-Type-Options', 'nosniff'],
  ['Referrer-Policy', 'same-origin'],
  ['X-Frame-Options', 'DENY'],
];

/** The English/Russian switch (web/src/lang.ts wires it): the chosen language is the pressed button. */
export function langSwitch(lang: string, label: string): string {
  const buttons = (['en', 'ru'] as const)
    .map((l) => `<button type="button" class="lang" data-lang="${l}" aria-pressed="${l === lang}" lang="${l}">${l === 'en' ? 'English' : 'Русский'}</button>`)
    .join('');
  return `<div role="group" aria-label="${esc(label)}" class="langs">${buttons}</div>`;
}

/** data-* attributes of <body> the script reads (e.g. the currency), escaped. */
export function pageShell(opts: { lang: string; title: string; page: string; assets: AssetSet; body: string; data?: Record<string, string> }): string {
  const data = Object.entries(opts.data ?? {})
    .map(([k, v]) => ` data-${k}="${esc(v)}"`)
    .join('');
  return (
    `<!doctype html><html lang="${esc(opts.lang)}"><head><meta charset="utf-8">` +
    `<meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>${esc(opts.title)}</title>` +
    `<link rel="icon" href="${opts.assets.url('icon.svg')}" type="image/svg+xml">` +
    `<link rel="stylesheet" href="${opts.assets.url('app.css')}">` +
    `<script defer src="${opts.assets.url('app.js')}"></script>` +
    `</head><body data-page="${esc(opts.page)}"${data}>${opts.body}</body></html>`
  );
}

/**
 * GET `path`: an HTML page rendered ahead in each language (and whatever
 * else `pick` tells apart by the Cookie header), the language chosen by
 * ?lang=, the `lang` cookie, then Accept-Language; answered from memory with
 * its ETag, compressed as the client accepts.
 */
export function pageRoute(path: string, pick: (lang: Lang, cookieHeader: string) => Encoded): Route {
  return {
    method: 'get',
    path,
    surface: 'web',
    envelope: 'rest',
    readsBody: false,
    headers: ['accept-encoding', 'accept-language', 'cookie'],
    handle(ctx) {
      const lang = chooseLang(ctx.query, ctx.headers[2], ctx.headers[1]);
      const page = pick(lang, ctx.headers[2]);
      const headers: Array<readonly [string, string]> = [
        ...PAGE_HEADERS,
        ['ETag', page.etag],
        ['Cache-Control', 'no-cache'],
        ['Vary', 'Accept-Encoding, Accept-Language, Cookie'],
        ['Content-Language', lang],
      ];
      if (notModified(ctx.ifNoneMatch, page.etag)) {
        send(ctx, 304, null, '', headers);
        return;
      }
      const { coding, bytes } = pickEncoding(page, ctx.headers[0]);
      if (coding !== null) headers.push(['Content-Encoding', coding]);
      send(ctx, 200, page.type, bytes, headers);
    },
  };
}
