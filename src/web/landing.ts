// GET /: the public model catalog page, rendered from the worker's catalog
// snapshot — the same public objects GET /v1/models serves — once per catalog
// revision and language, compressed once, then served from memory with an
// ETag. No store query per request. A stale catalog renders a notice and no
// model, as the list does.
import type { CatalogHolder } from '../catalog/holder.js';
import type { Route } from '../server/context.js';
import type { AssetSet } from './assets.js';
import { bannerSvg } from './banner.js';
import { encodeBody, type Encoded } from './encoded.js';
import { esc, langSwitch, pageRoute, pageShell } from './html.js';
import { TEXT, tokenCount, type Lang } from './landing-text.js';
import type { Price } from '../catalog/types.js';
import { formatMoney } from '../money/money.js';

type Model = Record<string, any>;

const BADGES = ['top', 'value', 'fast'] as const;

/** The example request body of each protocol, and how that protocol presents the key. */
function exampleCall(protocol: string, model: string): string {
  const json = (body: unknown) => `'${JSON.stringify(body)}'`;
  const bearer = `-H "Authorization: Bearer $TOLLGATE_KEY"`;
  const type = `-H 'Content-Type: application/json'`;
  switch (protocol) {
    case 'chat_completions':
      return `curl "$TOLLGATE_URL/v1/chat/completions" ${bearer} ${type} \\\n  -d ${json({ model, messages: [{ role: 'user', content: 'Hello!' }] })}`;
    case 'responses':
      return `curl "$TOLLGATE_URL/v1/responses" ${bearer} ${type} \\\n  -d ${json({ model, input: 'Hello!' })}`;
    case 'native_messages':
      return `curl "$TOLLGATE_URL/v1/messages" -H "x-api-key: $TOLLGATE_KEY" -H 'anthropic-version: 2023-06-01' ${type} \\\n  -d ${json({ model, max_tokens: 256, messages: [{ role: 'user', content: 'Hello!' }] })}`;
    case 'embeddings':
      // The spec wants base64 and an array input: the example must be a call that succeeds.
      return `curl "$TOLLGATE_URL/v1/embeddings" ${bearer} ${type} \\\n  -d ${json({ model, encoding_format: 'base64', input: ['Hello!'] })}`;
    case 'images':
      return `curl "$TOLLGATE_URL/v1/images/generations" ${bearer} ${type} \\\n  -d ${json({ model, prompt: 'A lighthouse at dawn' })}`;
    default:
      return '';
  }
}

function count(n: unknown, lang: Lang): string {
  return typeof n === 'number' ? tokenCount(n, lang) : '—';
}

/** A price in micros as the page shows it: "0.15", "2.50", "0.075" (every significant digit, at least two). */
function amount(micros: number, lang: Lang): string {
  const text = formatMoney(micros);
  return lang === 'ru' ? text.replace('.', ',') : text;
}

/** What the model costs, in the account currency: per million tokens (input, cached input, output) or per image. */
function priceText(price: Price | undefined, currency: string, lang: Lang): string {
  const t = TEXT[lang];
  if (price === undefined) return '—';
  const parts: string[] = [];
  const tokens = [
    [t.input, price.inputPerMtok],
    [t.cachedInput, price.cachedInputPerMtok],
    [t.output, price.outputPerMtok],
  ] as const;
  if (tokens.some(([, v]) => v > 0)) {
    parts.push(`${tokens.filter(([, v]) => v > 0).map(([label, v]) => `${label} ${amount(v, lang)}`).join(' · ')} ${currency} ${t.perMtok}`);
  }
  if (price.imageUnit > 0) parts.push(`${amount(price.imageUnit, lang)} ${currency} ${t.perImage}`);
  return parts.length > 0 ? parts.join('; ') : t.free;
}

function name(m: Model, lang: Lang): string {
  return lang === 'ru' ? m.display_name_ru : m.display_name_en;
}

function card(m: Model, lang: Lang, price: Price | undefined, currency: string): string {
  const t = TEXT[lang];
  const id = esc(m.id);
  const examples = (m.protocol_codes as string[])
    .map((p) => {
      const code = esc(exampleCall(p, m.id));
      const codeId = `ex-${id}-${p}`;
      return (
        `<div class="example"><div class="example-head"><span>${esc(t.example)}: ${esc(t.protocol[p] ?? p)}</span>` +
        `<button type="button" class="copy" data-copy="${codeId}" data-copied="${esc(t.copied)}" aria-label="${esc(`${t.copy}: ${t.protocol[p] ?? p}, ${m.id}`)}">${esc(t.copy)}</button></div>` +
        `<pre tabindex="0"><code id="${codeId}">${code}</code></pre></div>`
      );
    })
    .join('');
  const spend = m.typical_request ? `${esc(m.typical_request.average_spend)}` : esc(t.noTraffic);
  const vendor = lang === 'ru' ? m.vendor.display_name_ru : m.vendor.display_name_en;
  return (
    `<article class="card" id="model-${id}" aria-labelledby="name-${id}">` +
    `<div class="banner">${bannerSvg(m.banner_seed)}</div>` +
    `<div class="card-body"><h3 id="name-${id}">${esc(name(m, lang))}</h3>` +
    `<p class="model-id"><code>${id}</code></p>` +
    `<p class="desc">${esc(lang === 'ru' ? m.description_ru : m.description_en)}</p>` +
    `<dl class="facts">` +
    `<dt>${esc(t.vendor)}</dt><dd>${esc(vendor)}</dd>` +
    `<dt>${esc(t.modalities)}</dt><dd>${esc((m.modality_codes as string[]).map((c) => t.modality[c] ?? c).join(', '))}</dd>` +
    `<dt>${esc(t.protocols)}</dt><dd>${esc((m.protocol_codes as string[]).map((c) => t.protocol[c] ?? c).join(', '))}</dd>` +
    `<dt>${esc(t.context)}</dt><dd>${count(m.context_window_tokens, lang)}</dd>` +
    `<dt>${esc(t.maxOutput)}</dt><dd>${count(m.max_output_tokens, lang)}</dd>` +
    `<dt>${esc(t.price)}</dt><dd class="price">${esc(priceText(price, currency, lang))}</dd>` +
    `<dt>${esc(t.typical)}</dt><dd>${spend}</dd>` +
    `</dl>${examples}</div></article>`
  );
}

function header(models: Model[], lang: Lang): string {
  const t = TEXT[lang];
  const featured = BADGES.map((b) => models.find((m) => m.header_badge === b))
    .map((m, i) => (m === undefined ? '' : `<li><a href="#model-${esc(m.id)}"><span class="badge badge-${BADGES[i]}">${esc(t.badge[BADGES[i]])}</span> ${esc(name(m, lang))}</a></li>`))
    .join('');
  return (
    `<header class="site"><div class="brand"><a href="/" class="logo">Tollgate</a><p class="tagline">${esc(t.tagline)}</p></div>` +
    `<nav aria-label="${esc(t.headerPanel)}" class="featured"><ul>${featured}</ul></nav>` +
    `<div class="tools">${langSwitch(lang, t.language)}` +
    `<a class="button" href="/console">${esc(t.console)}</a></div></header>`
  );
}

function carousel(models: Model[], lang: Lang): string {
  const t = TEXT[lang];
  const shown = models.filter((m) => typeof m.showcase_position === 'number').sort((a, b) => a.showcase_position - b.showcase_position);
  if (shown.length === 0) return '';
  const slides = shown
    .map(
      (m, i) =>
        `<li class="slide" data-model="${esc(m.id)}" aria-roledescription="slide" aria-label="${i + 1} / ${shown.length}: ${esc(name(m, lang))}">` +
        `<a href="#model-${esc(m.id)}"><div class="banner">${bannerSvg(m.banner_seed)}</div><span class="slide-name">${esc(name(m, lang))}</span>` +
        `<span class="slide-desc">${esc(lang === 'ru' ? m.description_ru : m.description_en)}</span></a></li>`,
    )
    .join('');
  return (
    `<section class="carousel" aria-roledescription="carousel" aria-labelledby="showcase-title"><div class="section-head"><h2 id="showcase-title">${esc(t.showcase)}</h2>` +
    `<div class="carousel-controls"><button type="button" class="prev" aria-label="${esc(t.previous)}" aria-controls="slides">‹</button>` +
    `<button type="button" class="next" aria-label="${esc(t.next)}" aria-controls="slides">›</button></div></div>` +
    `<ul id="slides" class="slides">${slides}</ul></section>`
  );
}

/** The page's view of prices: the catalog model's price by public id, and the account currency. */
export interface PriceBook {
  priceOf(id: string): Price | undefined;
  currency: string;
}

export function renderLanding(models: Model[], stale: boolean, lang: Lang, assets: AssetSet, prices: PriceBook): string {
  const t = TEXT[lang];
  let main: string;
  if (stale) main = `<p class="notice" role="status">${esc(t.stale)}</p>`;
  else if (models.length === 0) main = `<p class="notice" role="status">${esc(t.empty)}</p>`;
  else
    main =
      carousel(models, lang) +
      `<section aria-labelledby="all-title"><h2 id="all-title">${esc(t.all)}</h2><p class="hint" id="set-url">${esc(t.setUrl)}</p>` +
      `<div class="cards">${models.map((m) => card(m, lang, prices.priceOf(m.id), prices.currency)).join('')}</div></section>`;
  const body = (stale ? `<header class="site"><div class="brand"><a href="/" class="logo">Tollgate</a></div></header>` : header(models, lang)) + `<main id="main">${main}</main>`;
  return pageShell({ lang, title: t.title, page: 'landing', assets, body });
}

export function landingRoute(catalog: CatalogHolder, assets: AssetSet, currency: string): Route {
  // One rendering per (catalog list ETag, language), replaced when the catalog moves.
  let renderedFor = '';
  const pages = new Map<Lang, Encoded>();
  const page = (lang: Lang): Encoded => {
    const snap = catalog.snapshot;
    if (snap.etag !== renderedFor) {
      pages.clear();
      renderedFor = snap.etag;
    }
    let p = pages.get(lang);
    if (p === undefined) {
      p = encodeBody('text/html; charset=utf-8', renderLanding(snap.stale ? [] : (snap.publicModels as Model[]), snap.stale, lang, assets, {
          priceOf: (id) => snap.byName.get(id)?.price,
          currency,
        }));
      pages.set(lang, p);
    }
    return p;
  };
  return pageRoute('/', (lang) => page(lang));
}
