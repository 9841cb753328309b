// The consoles for people (issue 35) in a real browser against a real
// gateway: Russian chosen by ?lang, by the remembered choice and by
// Accept-Language; money in the account currency; a key created from the form
// with a scope chosen by model name, an expiry and a quota; each model's
// prices (input, cached input, output, per image) where it is chosen; usage
// rows and the operator's catalog naming surfaces, not their codes; a refused
// field's rule in the error box, in both languages; the spend chart's
// axes and zero days; no error in the browser's console on any page load, nor
// on one with a session cookie that no longer signs in; on a phone
// every key's actions in sight without scrolling sideways. Screenshots of
// every console page, both widths, both languages, go to test/web/artifacts/.
import { join } from 'node:path';
import t from 'tap';
import type { BrowserContext, Page } from 'playwright-core';
import { startGateway, type Gateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, console_, provision } from '../helpers/provision.js';
import { ARTIFACTS, chromiumPath, DESKTOP, launch, newContext, PHONE, type Launched } from './browser.js';

const PASSWORD = 'correct horse battery';

if (chromiumPath() === null) {
  if (process.env.CI === 'true') throw new Error('chromium is missing (apt-get install -y chromium)');
  t.test('console browser tests', { skip: 'chromium is not installed (apt-get install -y chromium)' }, async () => {});
} else {
  let gw: Gateway;
  let chrome: Launched;
  let acme: { orgId: string; key: string; keyId: string };
  t.before(async () => {
    gw = await startGateway({ env: { ADMIN_TOKEN, CURRENCY: 'EUR' } });
    chrome = await launch();
    acme = await provision(gw.url, { name: 'Acme', balance: '50.123456' });
    await console_(gw.url, 'POST', `/organizations/${acme.orgId}/accounts`, { email: 'ann@acme.test', name: 'Ann', password: PASSWORD });
    // One paid call today, so the chart has a bar beside its zero days.
    const r = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acme.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'nw-swift-1', messages: [{ role: 'user', content: 'hello' }], max_tokens: 16 }),
    });
    if (r.status !== 200) throw new Error(`the setup call failed: ${r.status} ${await r.text()}`);
  });
  t.teardown(async () => {
    await chrome?.close();
    await gw?.stop();
  });

  /** Errors the page writes to the browser's console (a failed load, a CSP violation, a script error). */
  function watch(page: Page): string[] {
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => m.type() === 'error' && errors.push(`${page.url()}: ${m.text()}`));
    return errors;
  }

  async function signIn(page: Page, lang: 'en' | 'ru', who: 'ann' | 'operator'): Promise<void> {
    await page.goto(`${gw.url}/console?lang=${lang}`);
    if (who === 'ann') {
      await page.locator('#email').fill('ann@acme.test');
      await page.locator('#password').fill(PASSWORD);
      await page.locator('form[aria-labelledby="signin-title"] button[type=submit]').click();
    } else {
      await page.locator('#admin-token').fill(ADMIN_TOKEN);
      await page.locator('form[aria-labelledby="op-title"] button[type=submit]').click();
    }
    await page.locator('#nav a').first().waitFor();
  }

  t.test('the console is in Russian by ?lang, by the remembered choice and by Accept-Language', async (t) => {
    const en = await newContext(chrome.browser, gw.url);
    const page = await en.newPage();
    const errors = watch(page);
    await page.goto(`${gw.url}/console`);
    t.equal(await page.getAttribute('html', 'lang'), 'en', 'an English browser gets English');
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();

    await page.goto(`${gw.url}/console?lang=ru`);
    t.equal(await page.getAttribute('html', 'lang'), 'ru', '?lang=ru');
    await page.getByRole('heading', { name: 'Войти' }).waitFor();
    t.equal(await page.locator('label[for=password]').innerText(), 'Пароль');

    // The switch remembers: a plain visit afterwards is Russian.
    await page.goto(`${gw.url}/console`);
    await page.getByRole('button', { name: 'Русский' }).click();
    await page.waitForURL(/lang=ru/);
    await page.goto(`${gw.url}/console`);
    t.equal(await page.getAttribute('html', 'lang'), 'ru', 'the remembered choice (cookie)');
    t.equal(await page.getAttribute('button.lang[data-lang=ru]', 'aria-pressed'), 'true', 'the switch shows the chosen language');
    // Remembered in localStorage only (the cookie gone): the page turns to it at once.
    await en.clearCookies();
    await page.goto(`${gw.url}/console`);
    await page.waitForURL(/lang=ru/);
    await page.getByRole('heading', { name: 'Войти' }).waitFor();
    t.equal(await page.getAttribute('html', 'lang'), 'ru', 'the remembered choice (localStorage)');
    t.same(errors, [], 'no errors in the browser console');
    await en.close();

    const ru = await newContext(chrome.browser, gw.url, DESKTOP, 'ru-RU');
    const p2 = await ru.newPage();
    await p2.goto(`${gw.url}/console`);
    t.equal(await p2.getAttribute('html', 'lang'), 'ru', 'Accept-Language: ru');
    await signIn(p2, 'ru', 'ann');
    await p2.getByRole('heading', { name: 'Acme' }).waitFor();
    const figures = await p2.locator('.figures').innerText();
    t.match(figures, /Баланс/, 'the overview in Russian');
    t.match(figures, /50,12\s€/, 'money in the account currency, two decimals, Russian digits');
    t.match(figures, /0 открытых удержаний/, 'Russian plural by rule');
    const org = await console_(gw.url, 'GET', `/organizations/${acme.orgId}`);
    t.match(org.balance, /^50\.\d{3,6}$/, 'a balance with sub-cent digits');
    t.equal(await p2.locator('.figure .money').first().getAttribute('title'), `${org.balance} EUR`, 'the exact amount on hover');
    await p2.locator('#nav a', { hasText: 'Ключи' }).click();
    await p2.getByRole('heading', { name: 'API-ключи' }).waitFor();
    t.match(await p2.locator('table').innerText(), /действует/, 'key status in Russian');
    await ru.close();
  });

  t.test('a key is created from the form with a scope chosen by model name, an expiry and a quota', async (t) => {
    const context = await newContext(chrome.browser, gw.url);
    const page = await context.newPage();
    const errors = watch(page);
    await signIn(page, 'en', 'ann');
    await page.goto(`${gw.url}/console#/keys`);
    await page.getByRole('heading', { name: 'Create a key' }).waitFor();
    const until = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10);
    await page.getByLabel('Name', { exact: true }).fill('scoped key');
    await page.locator('#new-key-model-nw-swift-1').check();
    t.match(await page.locator('label[for=new-key-model-nw-swift-1]').innerText(), /in 0\.15 · cached in 0\.075 · out 0\.60 EUR per 1M tokens/, 'issue 34 item 3: the price beside the model where it is chosen');
    await page.locator('#new-key-expires').fill(until);
    await page.getByLabel('Requests per minute (optional)').fill('30');
    t.match(await page.locator('form[aria-labelledby=create-title]').innerText(), /the organization's applies to all its keys together: [\d,]+\/s · [\d,]+\/min/, 'the form says which quotas apply');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.locator('#new-secret').waitFor();
    const keys = await console_(gw.url, 'GET', `/organizations/${acme.orgId}/keys`);
    const key = keys.data.find((k: any) => k.name === 'scoped key');
    const models = ((await (await fetch(`${gw.url}/v1/models`)).json()) as any).data as any[];
    const swift = models.find((m) => m.id === 'nw-swift-1');
    t.same(key.scope, { model_ids: [swift.model_id] }, 'the scope names the model ticked by name');
    t.equal(key.expires_at, `${until}T23:59:59.000Z`, 'expires at the end of the chosen day (UTC)');
    t.equal(key.quota_per_minute, 30, 'the key has its own quota of 30 requests a minute');
    const row = await page.locator('tr', { hasText: 'scoped key' }).innerText();
    t.match(row, /models: nw-swift-1/, 'the list shows the scope by name');
    t.match(row, /\b30\/min\b/, 'and the quota');
    t.same([await page.locator('#new-key-quota').getAttribute('min'), await page.locator('#new-key-quota').getAttribute('max')], ['1', '1000000'], 'the field is bounded as the API bounds it');
    // Edited from the key's form, and shown on the key's page.
    await page.getByRole('button', { name: 'Edit scoped key' }).click();
    await page.locator(`#edit-quota-${key.id}`).fill('45');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.locator('tr', { hasText: '45/min' }).waitFor();
    await page.goto(`${gw.url}/console#/keys/${key.id}`);
    t.match(await page.locator('dl.facts').innerText(), /Quota\s+45\/min/, "the key's page shows its quota");
    t.same(errors, [], 'no errors in the browser console');
    await context.close();
  });

  t.test('issue 34 item 3: the key form shows input, cached-input and output prices, and per-image prices, in English and Russian', async (t) => {
    const want = {
      en: {
        'nw-swift-1': 'in 0.15 · cached in 0.075 · out 0.60 EUR per 1M tokens',
        'ks-quill-1': 'in 3.00 · cached in 0.30 · out 15.00 EUR per 1M tokens',
        'nw-embed-1': 'in 0.02 EUR per 1M tokens',
        'au-canvas-1': '0.04 EUR per image',
      },
      ru: {
        'nw-swift-1': 'ввод 0,15 · ввод из кэша 0,075 · вывод 0,60 EUR за 1 млн токенов',
        'ks-quill-1': 'ввод 3,00 · ввод из кэша 0,30 · вывод 15,00 EUR за 1 млн токенов',
        'nw-embed-1': 'ввод 0,02 EUR за 1 млн токенов',
        'au-canvas-1': '0,04 EUR за изображение',
      },
    };
    for (const lang of ['en', 'ru'] as const) {
      const context = await newContext(chrome.browser, gw.url);
      const page = await context.newPage();
      await signIn(page, lang, 'ann');
      await page.goto(`${gw.url}/console?lang=${lang}#/keys`);
      await page.locator('#new-key-model-nw-swift-1').waitFor();
      for (const [model, price] of Object.entries(want[lang])) {
        t.equal(await page.locator(`label[for=new-key-model-${model}] .price`).innerText(), price, `${lang}: ${model}`);
      }
      await context.close();
    }
  });

  t.test('issue 34 item 7: usage rows and the operator\'s catalog name surfaces and protocols; the codes only in titles', async (t) => {
    // A Messages call beside the setup's chat call, its usage row awaited through the API.
    const r = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': acme.key, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'ks-quill-1', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] }),
    });
    t.equal(r.status, 200, 'the Messages call is served');
    await r.arrayBuffer();
    const surfaces = async () => ((await console_(gw.url, 'GET', `/organizations/${acme.orgId}/usage?limit=100`)).data as any[]).map((u) => u.surface);
    for (let i = 0; !(await surfaces()).includes('native_messages'); i++) {
      if (i === 100) throw new Error('the Messages call has no usage row after 10 s');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const CODES = /chat_completions|native_messages|openai-compatible|anthropic-compatible/;
    const names = {
      en: { chat_completions: 'Chat completions', native_messages: 'Messages', responses: 'Responses', embeddings: 'Embeddings', images: 'Images', completed: 'completed' },
      ru: { chat_completions: 'Завершения чата', native_messages: 'Сообщения', responses: 'Ответы', embeddings: 'Эмбеддинги', images: 'Изображения', completed: 'выполнен' },
    };
    for (const lang of ['en', 'ru'] as const) {
      const context = await newContext(chrome.browser, gw.url);
      const page = await context.newPage();
      await signIn(page, lang, 'ann');
      await page.goto(`${gw.url}/console?lang=${lang}#/usage`);
      const usage = page.locator('section[aria-labelledby=usage-title]');
      await usage.locator('table').waitFor();
      for (const [model, surface] of [['nw-swift-1', 'chat_completions'], ['ks-quill-1', 'native_messages']] as const) {
        const row = usage.locator('tbody tr', { hasText: model }).first();
        const cell = row.locator('td').nth(3);
        t.equal(await cell.innerText(), names[lang][surface], `${lang}: the ${model} row names its surface`);
        t.equal(await cell.locator('span').getAttribute('title'), surface, `${lang}: the code on hover`);
        t.equal(await row.locator('td').nth(7).innerText(), names[lang].completed, `${lang}: the outcome in the page's language`);
      }
      t.notMatch(await usage.innerText(), CODES, `${lang}: no code among the usage rows`);
      await context.close();

      const op = await newContext(chrome.browser, gw.url);
      const catalog = await op.newPage();
      await signIn(catalog, lang, 'operator');
      await catalog.goto(`${gw.url}/console?lang=${lang}#/catalog`);
      const routes = catalog.locator('#main table').first();
      await routes.waitFor();
      const protocols = await routes.locator('tbody td:nth-child(2)').evaluateAll((els) => els.map((e) => [e.textContent, e.querySelector('span')?.getAttribute('title')]));
      t.ok(protocols.length >= 5, `${lang}: a row per route`);
      for (const [text, code] of protocols) t.equal(text, (names[lang] as Record<string, string>)[code ?? ''], `${lang}: route protocol ${code} shows as “${text}”`);
      t.notMatch(await catalog.locator('#main').innerText(), CODES, `${lang}: no protocol code among the operator's catalog`);
      await op.close();
    }
  });

  t.test('a session cookie that no longer signs in: sign-in on page load, no error in the browser console', async (t) => {
    // A session made and ended through the API, its cookie left in the browser (as one that expired is).
    const res = await fetch(`${gw.url}/console/v1/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'ann@acme.test', password: PASSWORD }),
    });
    const token = /tg_session=([^;]+)/.exec(res.headers.get('set-cookie') ?? '')![1];
    const { csrf_token: csrf } = (await res.json()) as any;
    const out = await fetch(`${gw.url}/console/v1/sessions/current`, { method: 'DELETE', headers: { cookie: `tg_session=${token}`, 'x-csrf-token': csrf } });
    t.equal(out.status, 200, 'the session ended');
    const context = await newContext(chrome.browser, gw.url);
    await context.addCookies([{ name: 'tg_session', value: token, domain: '127.0.0.1', path: '/console', httpOnly: true, sameSite: 'Strict' }]);
    const page = await context.newPage();
    const errors = watch(page);
    await page.goto(`${gw.url}/console#/keys`);
    await page.locator('#signin-title').waitFor();
    await page.waitForLoadState('networkidle');
    t.same(errors, [], 'no error in the browser console');
    t.notOk((await context.cookies()).some((c) => c.name === 'tg_session'), 'the stale cookie is cleared, so the next load asks nothing');
    await context.close();
  });

  t.test('the operator credits an amount typed the Russian way (2,50) in the currency the form names', async (t) => {
    const org = await provision(gw.url, { name: 'Comma Co', balance: '1.00' });
    const context = await newContext(chrome.browser, gw.url);
    const page = await context.newPage();
    await signIn(page, 'ru', 'operator');
    await page.goto(`${gw.url}/console?lang=ru#/orgs/${org.orgId}`);
    t.equal(await page.locator('label[for=credit-amount]').innerText(), 'Сумма (EUR)');
    await page.locator('#credit-amount').fill('2,50');
    await page.locator('form[aria-label="Пополнение"] button[type=submit]').click();
    await page.locator('.figure .money', { hasText: '3,50' }).first().waitFor();
    t.equal((await console_(gw.url, 'GET', `/organizations/${org.orgId}`)).balance, '3.50', 'credited 2.50');
    await context.close();
  });

  t.test('issue 34 items 2, 12: a refused field: the error box states the rule (en: the API\'s sentence, once; ru: a Russian lead, then the rule)', async (t) => {
    const org = await provision(gw.url, { name: 'Rules Co', balance: '1.00' });
    const rule = 'password: must be 10 to 256 characters';
    for (const [lang, formName] of [['en', 'Add a person'], ['ru', 'Добавить человека']] as const) {
      const context = await newContext(chrome.browser, gw.url);
      const page = await context.newPage();
      await signIn(page, lang, 'operator');
      await page.goto(`${gw.url}/console?lang=${lang}#/orgs/${org.orgId}`);
      const form = page.locator(`form[aria-label="${formName}"]`);
      await form.locator('#acct-email').fill(`pat-${lang}@rules.test`);
      await form.locator('#acct-name').fill('Pat');
      await form.locator('#acct-password').fill('x'.repeat(300)); // past the API's maximum (the page checks only the minimum)
      await form.locator('button[type=submit]').click();
      const box = form.locator('.error-box');
      await box.waitFor();
      if (lang === 'en') {
        t.equal(await box.innerText(), `${rule}.`, 'en: the member and the rule lead, with no generic sentence');
        t.equal(await box.locator('li').count(), 0, 'and are not repeated below');
      } else {
        t.match(await box.innerText(), /^Запрос отклонён: проверьте поля\./, 'ru: a Russian lead');
        t.same(await box.locator('li').allInnerTexts(), [rule], 'then the rule, as the API words it (English: no translation table for rules)');
      }
      await context.close();
    }
  });

  t.test('a screen whose answer arrives after the hash moved on does not draw over the current one', async (t) => {
    const org = await provision(gw.url, { name: 'Late List Co', balance: '1.00' });
    const context = await newContext(chrome.browser, gw.url);
    const page = await context.newPage();
    // The list of organizations (the operator's first screen) answers slowly, as on a loaded machine.
    await page.route(/\/console\/v1\/organizations\?/, async (r) => {
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await r.continue();
    });
    const listAnswered = page.waitForResponse(/\/console\/v1\/organizations\?/, { timeout: 60_000 });
    await signIn(page, 'en', 'operator');
    // The same document, a new hash: the list's route is still waiting for its answer.
    await page.goto(`${gw.url}/console?lang=en#/orgs/${org.orgId}`);
    await page.locator('label[for=credit-amount]').waitFor();
    await (await listAnswered).finished();
    // Time for the late answer's screen to be drawn, were it still drawn.
    await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 300)));
    t.equal(await page.locator('label[for=credit-amount]').count(), 1, 'the organization is still shown after the list answered');
    t.equal(await page.locator('h1', { hasText: 'Late List Co' }).count(), 1, 'its name heads the screen');
    await context.close();
  });

  t.test('the spend chart has axes with units, every day of the range and a table', async (t) => {
    for (const [label, viewport] of [['desktop', DESKTOP], ['phone', PHONE]] as const) {
      const context = await newContext(chrome.browser, gw.url, viewport);
      const page = await context.newPage();
      await signIn(page, 'en', 'ann');
      await page.goto(`${gw.url}/console#/usage`);
      await page.locator('.chart svg').waitFor();
      t.equal(await page.locator('.chart .bar').count(), 30, `${label}: a bar for each of the 30 days`);
      t.ok((await page.locator('.chart .bar.zero').count()) >= 1, `${label}: zero days are drawn`);
      t.equal(await page.locator('.chart .bar:not(.zero)').last().getAttribute('data-day'), new Date().toISOString().slice(0, 10), "today's spend is a bar");
      const yLabels = await page.locator('.chart .y-label').evaluateAll((els) => els.map((e) => e.textContent ?? ''));
      t.ok(yLabels.length >= 2 && yLabels.every((l) => l.includes('€')), `${label}: a y-axis in the currency (${yLabels.join(', ')})`);
      t.match(yLabels[0], /^€0\.00+$/, 'from zero');
      t.match(await page.locator('.chart .axis-title').first().textContent(), /EUR/, 'the axis names its unit');
      t.equal(await page.locator('.chart .x-label').last().textContent(), 'today', 'today is labelled');
      const size = await page.locator('.chart .x-label').first().evaluate((e) => (e as any).getBoundingClientRect().height);
      t.ok(size >= 11, `${label}: axis labels are readable (${size.toFixed(1)} px)`);
      const plot = await page.locator('.chart svg').boundingBox();
      const card = await page.locator('.chart .plot').boundingBox();
      t.ok(plot && card && Math.abs(plot.width - card.width) <= 1, `${label}: the chart fills its card`);
      t.equal(await page.locator('.chart details tbody tr').count(), 30, 'the same 30 days as a table');
      await context.close();
    }
  });

  t.test('on a phone every key shows its actions without scrolling sideways', async (t) => {
    for (let i = 0; i < 3; i++) await console_(gw.url, 'POST', `/organizations/${acme.orgId}/keys`, { name: `phone key ${i} with a rather long name` });
    const context = await newContext(chrome.browser, gw.url, PHONE);
    const page = await context.newPage();
    await signIn(page, 'en', 'ann');
    await page.goto(`${gw.url}/console#/keys`);
    await page.locator('table').waitFor();
    const width = await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth as number);
    t.ok(width <= PHONE.width, `the page is no wider than the phone (${width} px)`);
    const buttons = page.locator('td .row-actions button');
    t.ok((await buttons.count()) >= 8, 'Edit and Revoke for every live key');
    for (const b of await buttons.all()) {
      const box = await b.boundingBox();
      t.ok(box !== null && box.x >= 0 && box.x + box.width <= PHONE.width, `${await b.getAttribute('aria-label')} is in sight`);
    }
    const header = await page.locator('header.site').boundingBox();
    t.ok(header !== null && header.height <= 140, `the header is compact (${header?.height} px)`);
    await context.close();
  });

  /** Every console page, as the person or the operator sees it: [file name, who, hash, what shows it is drawn]. */
  const PAGES: Array<[string, 'none' | 'ann' | 'operator', string, string]> = [
    ['sign-in', 'none', '', '#signin-title'],
    ['overview', 'ann', '#/overview', '.figures'],
    ['keys', 'ann', '#/keys', 'table'],
    ['key', 'ann', `#/keys/KEY`, 'dl.facts'],
    ['usage', 'ann', '#/usage', '.chart svg'],
    ['orgs', 'operator', '#/orgs', 'table'],
    ['org', 'operator', '#/orgs/ORG', '.figures'],
    ['org-keys', 'operator', '#/orgs/ORG/keys', 'table'],
    ['org-usage', 'operator', '#/orgs/ORG/usage', '.chart svg'],
    ['catalog', 'operator', '#/catalog', 'table'],
  ];

  t.test('every console page loads without an error in the browser console, in both languages and widths', async (t) => {
    const empty = await provision(gw.url, { name: 'Nobody Yet' });
    for (const lang of ['en', 'ru'] as const) {
      for (const [label, viewport] of [['desktop', DESKTOP], ['phone', PHONE]] as const) {
        const contexts = new Map<string, BrowserContext>();
        for (const [name, who, hash, ready] of PAGES) {
          let context = contexts.get(who);
          if (context === undefined) {
            context = await newContext(chrome.browser, gw.url, viewport);
            contexts.set(who, context);
            if (who !== 'none') await signIn(await context.newPage(), lang, who);
          }
          const page = await context.newPage();
          const errors = watch(page);
          await page.goto(`${gw.url}/console?lang=${lang}${hash.replace('KEY', acme.keyId).replace('ORG', acme.orgId)}`);
          await page.locator(ready).first().waitFor();
          await page.waitForLoadState('networkidle');
          t.same(errors, [], `${name} (${lang}, ${label}): no console error`);
          t.equal(await page.getAttribute('html', 'lang'), lang);
          await page.screenshot({ path: join(ARTIFACTS, `console-${name}-${lang}-${label}.png`), fullPage: true });
          await page.close();
        }
        // The operator's view of an organization nobody can sign in to yet, and its keys page naming it.
        const op = await contexts.get('operator')!.newPage();
        await op.goto(`${gw.url}/console?lang=${lang}#/orgs/${empty.orgId}`);
        await op.locator('.figures').waitFor();
        t.equal(await op.locator('p.empty').count(), 1, 'People says nobody is there yet');
        await op.locator('nav.tabs a').nth(1).click();
        await op.locator('table').waitFor();
        t.match(await op.locator('#main').innerText(), /Nobody Yet/, "the keys page names the organization");
        t.equal(await op.locator('nav.tabs a[aria-current=page]').innerText(), lang === 'en' ? 'Keys' : 'Ключи', 'Keys is the current tab');
        for (const c of contexts.values()) await c.close();
      }
    }
  });
}
