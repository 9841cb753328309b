// The console: sign-in, then screens chosen by the URL's hash. A person of an
// organization sees their organization (#/overview, #/keys, #/keys/<id>,
// #/usage); the operator sees every organization (#/orgs, #/orgs/<id>[/keys|
// /usage]) and the catalog (#/catalog). What each may see is enforced by the
// API; these screens only draw what it answers, in the page's language.
namespace consoleApp {
  const h = ui.h;
  const t = i18n.t;
  let session: any = null;

  function main(): HTMLElement {
    return document.getElementById('main')!;
  }

  function signInForm(): void {
    const email = h('input', { id: 'email', type: 'email', autocomplete: 'username', required: true }) as HTMLInputElement;
    const password = h('input', { id: 'password', type: 'password', autocomplete: 'current-password', required: true }) as HTMLInputElement;
    const token = h('input', { id: 'admin-token', type: 'password', autocomplete: 'off' }) as HTMLInputElement;
    const status = h('div', {});
    const submit = async (body: unknown) => {
      try {
        session = await api.call('POST', '/sessions', body);
        api.csrf = session.csrf_token;
        location.hash = session.role === 'operator' ? '#/orgs' : '#/overview';
        route();
      } catch (err) {
        status.replaceChildren(views.errorBox(err));
        views.announce(err instanceof api.ApiError ? (t.errors[err.code] ?? err.message) : t.signInFailed);
      }
    };
    const form = h('form', { class: 'panel', 'aria-labelledby': 'signin-title' },
      h('h1', { id: 'signin-title' }, t.signIn),
      h('label', { for: 'email' }, t.email), email,
      h('label', { for: 'password' }, t.password), password,
      h('p', {}, h('button', { type: 'submit' }, t.signIn)),
    );
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      void submit({ email: email.value, password: password.value });
    });
    const operator = h('form', { class: 'panel', 'aria-labelledby': 'op-title' },
      h('h2', { id: 'op-title' }, t.operator),
      h('label', { for: 'admin-token' }, t.adminToken), token,
      h('p', {}, h('button', { type: 'submit', class: 'secondary' }, t.signInOperator)),
    );
    operator.addEventListener('submit', (ev) => {
      ev.preventDefault();
      void submit({ admin_token: token.value });
    });
    document.getElementById('nav')!.replaceChildren();
    document.getElementById('who')!.replaceChildren();
    main().replaceChildren(h('div', { class: 'signin' }, status, form, operator));
    email.focus();
  }

  function nav(links: Array<[string, string]>): void {
    const here = location.hash || links[0][0];
    document.getElementById('nav')!.replaceChildren(
      ...links.map(([href, label]) => h('a', { href, 'aria-current': here.startsWith(href) ? 'page' : undefined }, label)),
    );
    const who = session.account?.email ?? (session.role === 'operator' ? t.operatorWho : '');
    document.getElementById('who')!.replaceChildren(
      h('span', { class: 'who-name' }, who),
      h('button', { type: 'button', class: 'secondary', title: who, onclick: async () => {
        await api.call('DELETE', '/sessions/current').catch(() => {});
        session = null;
        api.csrf = '';
        location.hash = '';
        signInForm();
      } }, t.signOut),
    );
  }

  async function overview(m: HTMLElement, orgId: string): Promise<void> {
    const org = await api.call('GET', `/organizations/${orgId}`);
    m.replaceChildren(h('h1', {}, org.name), views.moneyFigures(org));
  }

  async function route(): Promise<void> {
    if (session === null) return signInForm();
    const hash = location.hash.replace(/^#/, '');
    const parts = hash.split('/').filter((p) => p !== '');
    // Each route draws into its own container: one the hash has moved on from
    // (its answers still arriving) draws into a detached one, not over this.
    const m = h('div', {}, h('p', {}, t.loading));
    main().replaceChildren(m);
    try {
      if (session.role === 'operator') {
        nav([['#/orgs', t.organizations], ['#/catalog', t.catalog]]);
        if (parts[0] === 'catalog') return await operatorView.catalog(m);
        if (parts[0] === 'orgs' && parts[1]) {
          const base = `#/orgs/${parts[1]}`;
          if (parts[2] === 'keys') return await keysView.render(m, parts[1], base);
          if (parts[2] === 'usage') return await usageView.render(m, parts[1], base);
          return await operatorView.org(m, parts[1]);
        }
        if (parts[0] === 'keys' && parts[1]) return await keysView.renderOne(m, parts[1]);
        return await operatorView.orgs(m);
      }
      const orgId = session.organization_id;
      nav([['#/overview', t.overview], ['#/keys', t.keys], ['#/usage', t.usage]]);
      if (parts[0] === 'keys' && parts[1]) return await keysView.renderOne(m, parts[1]);
      if (parts[0] === 'keys') return await keysView.render(m, orgId, null);
      if (parts[0] === 'usage') return await usageView.render(m, orgId, null);
      return await overview(m, orgId);
    } catch (err) {
      if (err instanceof api.ApiError && err.status === 401) {
        session = null;
        return signInForm();
      }
      m.replaceChildren(views.errorBox(err));
    }
  }

  export async function start(): Promise<void> {
    if (langSwitch.start()) return;
    // The server saw no session cookie: nothing to ask. With one, the status
    // route answers 200 either way, so an expired cookie logs no 401 here.
    if (document.body.dataset.session !== 'none') {
      try {
        const status = await api.call('GET', '/sessions/status');
        session = status.signed_in === true ? status : null;
        if (session !== null) api.csrf = session.csrf_token;
      } catch {
        session = null;
      }
    }
    window.addEventListener('hashchange', () => void route());
    await route();
  }
}
