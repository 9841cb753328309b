// The public catalog page's words in its two languages, and how the page's
// language is chosen: ?lang=, then the `lang` cookie the switch sets (with
// localStorage, see web/src/landing.ts), then Accept-Language as the first
// guess, then English.
export type Lang = 'en' | 'ru';

export const TEXT = {
  en: {
    title: 'Tollgate — models',
    tagline: 'One key, every model: pay per request, on the protocol you already speak.',
    console: 'Console',
    language: 'Language',
    headerPanel: 'Featured models',
    badge: { top: 'Top', value: 'Best value', fast: 'Fastest' } as Record<string, string>,
    showcase: 'Showcase',
    previous: 'Previous model',
    next: 'Next model',
    all: 'All models',
    vendor: 'Vendor',
    modalities: 'Modalities',
    protocols: 'Protocols',
    context: 'Context window',
    maxOutput: 'Max output',
    typical: 'Typical request',
    price: 'Price',
    perMtok: 'per 1M tokens',
    perImage: 'per image',
    input: 'input',
    cachedInput: 'cached input',
    output: 'output',
    free: 'free',
    noTraffic: 'not measured yet',
    tokens: { one: 'token', other: 'tokens' } as Record<string, string>,
    example: 'Example call',
    copy: 'Copy',
    copied: 'Copied',
    setUrl: 'Set TOLLGATE_URL to this gateway’s address and TOLLGATE_KEY to your API key.',
    stale: 'The model catalog cannot be read right now, so no models are listed. Please try again in a minute.',
    empty: 'No models are published yet.',
    modality: { text_generation: 'text', embeddings: 'embeddings', image_generation: 'images' } as Record<string, string>,
    protocol: { chat_completions: 'Chat completions', responses: 'Responses', native_messages: 'Messages', embeddings: 'Embeddings', images: 'Images' } as Record<string, string>,
  },
  ru: {
    title: 'Tollgate — модели',
    tagline: 'Один ключ — все модели: оплата за запрос, по протоколу, который вы уже знаете.',
    console: 'Консоль',
    language: 'Язык',
    headerPanel: 'Избранные модели',
    badge: { top: 'Лучшая', value: 'Выгодная', fast: 'Быстрая' } as Record<string, string>,
    showcase: 'Витрина',
    previous: 'Предыдущая модель',
    next: 'Следующая модель',
    all: 'Все модели',
    vendor: 'Разработчик',
    modalities: 'Модальности',
    protocols: 'Протоколы',
    context: 'Контекстное окно',
    maxOutput: 'Максимум ответа',
    typical: 'Типичный запрос',
    price: 'Цена',
    perMtok: 'за 1 млн токенов',
    perImage: 'за изображение',
    input: 'ввод',
    cachedInput: 'ввод из кэша',
    output: 'вывод',
    free: 'бесплатно',
    noTraffic: 'пока не измерено',
    // Russian plurals by rule: 1 токен, 2–4 токена (16 384 токена), 5–20 токенов, 21 токен.
    tokens: { one: 'токен', few: 'токена', many: 'токенов', other: 'токена' } as Record<string, string>,
    example: 'Пример вызова',
    copy: 'Копировать',
    copied: 'Скопировано',
    setUrl: 'Задайте в TOLLGATE_URL адрес шлюза, а в TOLLGATE_KEY — ваш API-ключ.',
    stale: 'Каталог моделей сейчас недоступен, поэтому модели не показаны. Попробуйте через минуту.',
    empty: 'Модели пока не опубликованы.',
    modality: { text_generation: 'текст', embeddings: 'эмбеддинги', image_generation: 'изображения' } as Record<string, string>,
    // The console's names for the same protocols (web/src/i18n.ts), so a usage row reads as the card did.
    protocol: { chat_completions: 'Завершения чата', responses: 'Ответы', native_messages: 'Сообщения', embeddings: 'Эмбеддинги', images: 'Изображения' } as Record<string, string>,
  },
} as const;

const PLURALS = { en: new Intl.PluralRules('en-US'), ru: new Intl.PluralRules('ru-RU') };

/** "16,384 tokens" / "16 384 токена": the number in the language's digits, the word in its plural form. */
export function tokenCount(n: number, lang: Lang): string {
  const forms = TEXT[lang].tokens;
  return `${n.toLocaleString(lang === 'ru' ? 'ru-RU' : 'en-US')} ${forms[PLURALS[lang].select(n)] ?? forms.other}`;
}

function cookie(header: string, name: string): string | null {
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

/** The first language of Accept-Language (by q) that the page has. */
function fromAcceptLanguage(header: string): Lang | null {
  let best: Lang | null = null;
  let bestQ = 0;
  for (const part of header.split(',').slice(0, 32)) {
    const [tag, ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    if (!(weight > bestQ)) continue;
    const primary = tag.trim().split('-')[0];
    if (primary === 'en' || primary === 'ru') {
      best = primary;
      bestQ = weight;
    }
  }
  return best;
}

export function chooseLang(query: string, cookieHeader: string, acceptLanguage: string): Lang {
  const q = /(?:^|&)lang=(en|ru)(?:&|$)/.exec(query);
  if (q !== null) return q[1] as Lang;
  const c = cookie(cookieHeader, 'lang');
  if (c === 'en' || c === 'ru') return c;
  return fromAcceptLanguage(acceptLanguage) ?? 'en';
}
