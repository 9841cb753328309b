// What every HTML page of the web side shares: escaping, the security
// headers (a CSP that allows no inline script and no other origin), and the
// page shell that links the content-hashed assets.
import type { AssetSet } from './assets.js';

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

export function pageShell(opts: { lang: string; title: string; page: string; assets: AssetSet; body: string }): string {
  return (
    `<!doctype html><html lang="${esc(opts.lang)}"><head><meta charset="utf-8">` +
    `<meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>${esc(opts.title)}</title>` +
    `<link rel="icon" href="${opts.assets.url('icon.svg')}" type="image/svg+xml">` +
    `<link rel="stylesheet" href="${opts.assets.url('app.css')}">` +
    `<script defer src="${opts.assets.url('app.js')}"></script>` +
    `</head><body data-page="${esc(opts.page)}">${opts.body}</body></html>`
  );
}
