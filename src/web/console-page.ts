// GET /console: the console's one HTML page (the script draws every screen
// from the console REST API, in the page's language, web/src/i18n.ts). The
// page holds no data: one rendering per language (chosen as the catalog page
// chooses, landing-text.ts) and per "has a session cookie or not", built once
// and cached by its ETag; what a person sees is decided by the API. Without
// a session cookie the script goes straight to sign-in instead of asking for
// the session and logging a 401 in the browser's console.
import type { Route } from '../server/context.js';
import type { AssetSet } from './assets.js';
import { encodeBody, type Encoded } from './encoded.js';
import { esc, langSwitch, pageRoute, pageShell } from './html.js';
import type { Lang } from './landing-text.js';
import { COOKIE } from './sessions.js';

const WORDS = {
  en: { title: 'Tollgate console', console: 'console', nav: 'Console', language: 'Language', loading: 'Loading…', noscript: 'The console needs JavaScript.' },
  ru: { title: 'Консоль Tollgate', console: 'консоль', nav: 'Консоль', language: 'Язык', loading: 'Загрузка…', noscript: 'Консоли нужен JavaScript.' },
} as const;

function render(assets: AssetSet, currency: string, lang: Lang, session: boolean): Encoded {
  const w = WORDS[lang];
  return encodeBody(
    'text/html; charset=utf-8',
    pageShell({
      lang,
      title: w.title,
      page: 'console',
      assets,
      data: { currency, session: session ? 'maybe' : 'none' },
      body:
        `<header class="site console"><div class="brand"><a href="/" class="logo">Tollgate</a> <span class="tagline">${esc(w.console)}</span></div>` +
        `<nav class="console-nav" id="nav" aria-label="${esc(w.nav)}"></nav><div class="tools">${langSwitch(lang, w.language)}<div class="who" id="who"></div></div></header>` +
        `<main id="main"><p>${esc(w.loading)}</p><noscript>${esc(w.noscript)}</noscript></main>` +
        '<div id="live" class="visually-hidden" aria-live="polite"></div>',
    }),
  );
}

/** Whether the Cookie header carries a session cookie (its value is the API's to judge). */
function hasSessionCookie(header: string): boolean {
  return header.split(';').some((part) => part.trim().startsWith(`${COOKIE}=`) && part.trim().length > COOKIE.length + 1);
}

export function consolePageRoutes(assets: AssetSet, currency: string): Route[] {
  const pages = new Map<string, Encoded>();
  for (const lang of ['en', 'ru'] as const) {
    for (const session of [true, false]) pages.set(`${lang}:${session}`, render(assets, currency, lang, session));
  }
  const pick = (lang: Lang, cookieHeader: string) => pages.get(`${lang}:${hasSessionCookie(cookieHeader)}`)!;
  return [pageRoute('/console', pick), pageRoute('/console/', pick)];
}
