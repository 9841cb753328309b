// The web side in a real browser (Debian's chromium through playwright-core)
// against a real gateway: the catalog page, an organization's console (sign
// in, create a key, its secret shown once and copied, a chat call with it,
// reload, revoke, the same call refused), a stale edit, another
// organization's key by URL, refused and rate-limited sign-ins. Screenshots
// at desktop and phone widths go to test/web/artifacts/.
import { join } from 'node:path';
import t from 'tap';
import { startGateway, type Gateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, console_, provision } from '../helpers/provision.js';
import { ARTIFACTS, chromiumPath, DESKTOP, launch, newContext, PHONE, type Launched } from './browser.js';

if (chromiumPath() === null) {
  if (process.env.CI === 'true') throw new Error('chromium is missing (apt-get install -y chromium)');
  t.test('browser tests', { skip: 'chromium is not installed (apt-get install -y chromium)' }, async () => {});
} else {
  let gw: Gateway;
  let chrome: Launched;
  t.before(async () => {
    gw = await startGateway({ env: { ADMIN_TOKEN } });
    chrome = await launch();
  });
  t.teardown(async () => {
    await chrome?.close();
    await gw?.stop();
  });

  const chat = (secret: string) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'nw-swift-1', messages: [{ role: 'user', content: 'hello' }], max_tokens: 64 }),
    });

  t.test('the catalog page lists the seeded models in carousel order and switches to Russian', async (t) => {
    const models = ((await (await fetch(`${gw.url}/v1/models`)).json()) as any).data as any[];
    const showcase = models.filter((m) => m.showcase_position != null).sort((a, b) => a.showcase_position - b.showcase_position).map((m) => m.id);
    t.ok(showcase.length >= 3, 'the demo catalog has a showcase');
    for (const [label, viewport] of [['desktop', DESKTOP], ['phone', PHONE]] as const) {
      const context = await newContext(chrome.browser, gw.url, viewport);
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(String(e)));
      page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
      const outside: string[] = [];
      page.on('request', (r) => !r.url().startsWith(gw.url) && outside.push(r.url()));
      await page.goto(gw.url + '/');
      t.same(await page.$$eval('#slides .slide', (els) => els.map((e) => (e as any).dataset.model)), showcase, `${label}: carousel in showcase_position order`);
      t.equal(await page.locator('.card').count(), models.length, `${label}: a card per model`);
      t.match(await page.locator('.featured').innerText(), /Top[\s\S]*Best value[\s\S]*Fastest/, 'header panel with the three badges');
      await page.screenshot({ path: join(ARTIFACTS, `landing-en-${label}.png`), fullPage: label === 'desktop' });
      await page.getByRole('button', { name: 'Русский' }).click();
      await page.waitForURL(/lang=ru/);
      t.equal(await page.getAttribute('html', 'lang'), 'ru', `${label}: the page is Russian`);
      t.match(await page.locator('#main').innerText(), /Свифт 1/, 'Russian display names');
      await page.screenshot({ path: join(ARTIFACTS, `landing-ru-${label}.png`), fullPage: label === 'desktop' });
      // Remembered: a plain visit comes back in Russian.
      await page.goto(gw.url + '/');
      t.equal(await page.getAttribute('html', 'lang'), 'ru', `${label}: the choice is remembered`);
      t.same(errors, [], 'no script errors, no CSP violations');
      t.same(outside, [], 'no request leaves the gateway');
      await context.close();
    }
  });

  t.test('a person signs in, creates a key, sees it once, uses it, revokes it', async (t) => {
    const mine = await provision(gw.url, { name: 'Acme', balance: '50.00' });
    const other = await provision(gw.url, { name: 'Other', balance: '5.00' });
    await console_(gw.url, 'POST', `/organizations/${mine.orgId}/accounts`, { email: 'ann@acme.test', name: 'Ann', password: 'correct horse battery' });

    for (const [label, viewport] of [['desktop', DESKTOP], ['phone', PHONE]] as const) {
      const context = await newContext(chrome.browser, gw.url, viewport);
      const page = await context.newPage();
      await page.goto(gw.url + '/console');
      await page.getByLabel('Email').fill('ann@acme.test');
      await page.getByLabel('Password', { exact: true }).fill('correct horse battery');
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByRole('heading', { name: 'Acme' }).waitFor();
      const cookies = await context.cookies();
      const session = cookies.find((c) => c.name === 'tg_session');
      t.ok(session?.httpOnly, 'session cookie is HttpOnly');
      t.equal(session?.sameSite, 'Strict', 'session cookie is SameSite=Strict');

      await page.getByRole('link', { name: 'Keys' }).click();
      await page.getByLabel('Name', { exact: true }).fill(`browser key ${label}`);
      await page.getByRole('button', { name: 'Create key' }).click();
      const secret = (await page.locator('#new-secret').innerText()).trim();
      t.match(secret, /^tg_sk_[0-9A-Za-z]{43}$/, 'the secret is shown on the screen that creates it');
      await page.getByRole('button', { name: 'Copy secret' }).click();
      t.equal(await page.evaluate(() => (globalThis as any).navigator.clipboard.readText()), secret, 'the copy button copies it');
      if (label === 'desktop') await page.screenshot({ path: join(ARTIFACTS, `keys-${label}.png`), fullPage: true });

      const ok = await chat(secret);
      t.equal(ok.status, 200, 'a chat call with the copied key succeeds');
      await ok.arrayBuffer();

      await page.reload();
      await page.getByRole('heading', { name: 'Keys', exact: true }).waitFor();
      t.equal(await page.locator('#new-secret').count(), 0, 'after a reload the secret is gone');
      t.notOk((await page.content()).includes(secret), 'and appears nowhere on the page');
      if (label === 'phone') await page.screenshot({ path: join(ARTIFACTS, `keys-${label}.png`), fullPage: true });

      page.once('dialog', (d) => void d.accept());
      await page.getByRole('button', { name: `Revoke browser key ${label}` }).click();
      await page.locator('tr', { hasText: `browser key ${label}` }).locator('.status-revoked').waitFor();
      const refused = await chat(secret);
      t.equal(refused.status, 401, 'the same call after revocation gets 401');

      await page.getByRole('link', { name: 'Usage' }).click();
      await page.getByRole('heading', { name: /Requests: \d+/ }).waitFor();
      t.match(await page.locator('#main').innerText(), /nw-swift-1/, 'the usage table shows the call');
      await page.screenshot({ path: join(ARTIFACTS, `usage-${label}.png`), fullPage: true });

      // Another organization's key by URL: the API says 404 and the screen says so.
      await page.goto(`${gw.url}/console#/keys/${other.keyId}`);
      await page.getByRole('alert').waitFor();
      t.match(await page.getByRole('alert').innerText(), /No API key has this id/, 'another organization\'s key is not reachable by URL');
      const direct = await page.evaluate(async (id) => (await fetch(`/console/v1/keys/${id}`)).status, other.keyId);
      t.equal(direct, 404);
      const foreignOrg = await page.evaluate(async (id) => (await fetch(`/console/v1/organizations/${id}/usage`)).status, other.orgId);
      t.equal(foreignOrg, 404, 'nor its usage');
      const noCsrf = await page.evaluate(async (id) => (await fetch(`/console/v1/keys/${id}/revoke`, { method: 'POST' })).status, mine.keyId);
      t.equal(noCsrf, 403, 'a change without the CSRF token is refused');
      await context.close();
    }
  });

  t.test('an edit with a stale version shows the conflict and offers a reload', async (t) => {
    const org = await provision(gw.url, { name: 'Stale Co' });
    await console_(gw.url, 'POST', `/organizations/${org.orgId}/accounts`, { email: 'bob@stale.test', name: 'Bob', password: 'another long password' });
    const context = await newContext(chrome.browser, gw.url);
    const page = await context.newPage();
    await page.goto(gw.url + '/console');
    await page.getByLabel('Email').fill('bob@stale.test');
    await page.getByLabel('Password', { exact: true }).fill('another long password');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Stale Co' }).waitFor();
    await page.goto(gw.url + '/console#/keys');
    await page.getByRole('button', { name: 'Edit test key' }).click();
    // The form holds the version the page read when it opened it: wait for it, or the edit below may come first and the page read the new version.
    await page.locator(`#edit-name-${org.keyId}`).waitFor();
    // Someone else edits the key meanwhile.
    const key = await console_(gw.url, 'GET', `/keys/${org.keyId}`);
    await console_(gw.url, 'PATCH', `/keys/${org.keyId}`, { version: key.version, name: 'renamed elsewhere' });
    await page.locator(`#edit-name-${org.keyId}`).fill('my name');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('alert').waitFor();
    t.match(await page.getByRole('alert').innerText(), /Someone else changed this key/, 'the conflict is said');
    await page.getByRole('button', { name: 'Reload the key' }).click();
    await page.locator('tr', { hasText: 'renamed elsewhere' }).waitFor();
    t.pass('reloading shows the other edit');
    await context.close();
  });

  t.test('a wrong password is refused, then sign-in is rate-limited', async (t) => {
    const org = await provision(gw.url, { name: 'Guarded' });
    await console_(gw.url, 'POST', `/organizations/${org.orgId}/accounts`, { email: 'cy@guarded.test', name: 'Cy', password: 'the right password' });
    const context = await newContext(chrome.browser, gw.url);
    const page = await context.newPage();
    await page.goto(gw.url + '/console');
    for (let i = 0; i < 5; i++) {
      await page.getByLabel('Email').fill('cy@guarded.test');
      await page.getByLabel('Password', { exact: true }).fill(`wrong password ${i}`);
      const answered = page.waitForResponse((r) => r.url().endsWith('/console/v1/sessions'));
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      t.equal((await answered).status(), 401, `wrong password ${i + 1} refused`);
      await page.getByRole('alert').filter({ hasText: 'The email or password is wrong.' }).waitFor();
    }
    await page.getByLabel('Email').fill('cy@guarded.test');
    await page.getByLabel('Password', { exact: true }).fill('the right password');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('alert').filter({ hasText: /Too many requests/ }).waitFor();
    t.pass('after 5 refusals even the right password is refused with 429');
    const r = await fetch(`${gw.url}/console/v1/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'cy@guarded.test', password: 'the right password' }) });
    t.equal(r.status, 429);
    t.ok(Number(r.headers.get('retry-after')) > 0, 'with Retry-After');
    await context.close();
  });
}
