// The operator's screens: organizations (search, paging, create), one
// organization (money, credit, quotas, people; its keys and usage are the
// other two tabs), and the published catalog, read-only.
namespace operatorView {
  const h = ui.h;
  const t = i18n.t;

  function field(id: string, label: string, input: HTMLElement): HTMLElement {
    input.id = id;
    return h('div', {}, h('label', { for: id }, label), input);
  }

  function form(label: string, fields: HTMLElement[], submit: string, onSubmit: (status: HTMLElement) => Promise<void>): HTMLElement {
    const status = h('div', {});
    const f = h('form', { class: 'panel', 'aria-label': label }, h('h2', {}, label), h('div', { class: 'form-row' }, ...fields, h('div', {}, h('button', { type: 'submit' }, submit))), status);
    f.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      try {
        await onSubmit(status);
      } catch (err) {
        status.replaceChildren(views.errorBox(err));
      }
    });
    return f;
  }

  /** A money input's label names the currency the amount is in. */
  function inCurrency(label: string): string {
    return `${label} (${money.currency()})`;
  }

  /** An amount as typed ("10,50" in Russian) as the API takes it ("10.50"); the API judges the rest. */
  function typedAmount(input: HTMLInputElement): string {
    return input.value.trim().replace(',', '.');
  }

  export async function orgs(main: HTMLElement): Promise<void> {
    let q = '';
    let cursor: string | null = null;
    const cursors: Array<string | null> = [];
    const draw = async (): Promise<void> => {
      const list = await api.call('GET', `/organizations${api.qs({ limit: 20, cursor, q })}`);
      const search = h('input', { type: 'search', value: q }) as HTMLInputElement;
      const name = h('input', { required: true, maxlength: 200 }) as HTMLInputElement;
      const balance = h('input', { placeholder: '0.00', inputmode: 'decimal' }) as HTMLInputElement;
      const searchForm = h('form', { class: 'panel', role: 'search', 'aria-label': t.searchOrgs },
        h('div', { class: 'form-row' }, field('org-search', t.nameContains, search), h('div', {}, h('button', { type: 'submit' }, t.search))));
      searchForm.addEventListener('submit', (ev) => {
        ev.preventDefault();
        q = search.value.trim();
        cursor = null;
        cursors.length = 0;
        void draw();
      });
      const rows = list.data.map((o: any) => [h('a', { href: `#/orgs/${o.id}` }, o.name), money.el(o.balance), money.el(o.held), o.open_holds == null ? '—' : i18n.int(o.open_holds), money.el(o.package), i18n.date(o.created_at)]);
      main.replaceChildren(
        h('h1', {}, t.organizations),
        searchForm,
        h('section', { class: 'panel' },
          rows.length === 0 ? views.empty(t.noOrgs) : views.table([t.name, t.balance, t.held, t.openHoldsCol, t.package, t.createdAt], rows, t.organizations, [1, 2, 3, 4]),
          views.pager(
            { disabled: cursors.length === 0, label: t.previousPage, go: () => { cursor = cursors.pop() ?? null; void draw(); } },
            { disabled: !list.has_more, label: t.nextPage, go: () => { cursors.push(cursor); cursor = list.next_cursor; void draw(); } })),
        form(t.createOrg, [field('org-name', t.name, name), field('org-balance', inCurrency(t.openingBalance), balance)], t.create, async () => {
          const org = await api.call('POST', '/organizations', { name: name.value, ...(balance.value ? { balance: typedAmount(balance) } : {}) });
          location.hash = `#/orgs/${org.id}`;
        }),
      );
    };
    await draw();
  }

  function people(accounts: any[], reload: () => void): HTMLElement {
    if (accounts.length === 0) return views.empty(t.noPeople);
    return views.table([t.name, t.email, t.status, t.createdAt, t.actions], accounts.map((a: any) => [a.name, a.email, t.accountStatus[a.status] ?? a.status, i18n.date(a.created_at),
      a.status === 'active' ? h('button', { type: 'button', class: 'danger', 'aria-label': t.disableNamed(a.email), onclick: async () => {
        if (window.confirm(t.confirmDisable(a.email))) { await api.call('POST', `/accounts/${a.id}/disable`); reload(); }
      } }, t.disable) : '']), t.peopleCaption);
  }

  export async function org(main: HTMLElement, orgId: string): Promise<void> {
    const [o, accounts] = await Promise.all([api.call('GET', `/organizations/${encodeURIComponent(orgId)}`), api.call('GET', `/organizations/${orgId}/accounts`)]);
    const amount = h('input', { required: true, inputmode: 'decimal', placeholder: '10.00' }) as HTMLInputElement;
    const target = h('select', {}, ...['balance', 'package'].map((f) => h('option', { value: f }, t.fundingValue[f]))) as HTMLSelectElement;
    const expires = h('input', { type: 'date' }) as HTMLInputElement;
    const perSecond = h('input', { inputmode: 'numeric', value: o.quotas.per_second_source === 'organization' ? String(o.quotas.per_second) : '' }) as HTMLInputElement;
    const perMinute = h('input', { inputmode: 'numeric', value: o.quotas.per_minute_source === 'organization' ? String(o.quotas.per_minute) : '' }) as HTMLInputElement;
    const email = h('input', { type: 'email', required: true }) as HTMLInputElement;
    const person = h('input', { required: true }) as HTMLInputElement;
    const password = h('input', { type: 'password', required: true, minlength: 10, autocomplete: 'new-password' }) as HTMLInputElement;
    const reload = () => void org(main, orgId);
    main.replaceChildren(
      ...views.orgHeader(o, `#/orgs/${orgId}`, 'overview'),
      views.moneyFigures(o),
      form(t.credit, [field('credit-amount', inCurrency(t.amount), amount), field('credit-target', t.to, target), field('credit-expires', t.packageExpires, expires)], t.credit, async () => {
        await api.call('POST', `/organizations/${orgId}/credits`, { amount: typedAmount(amount), target: target.value, ...(expires.value ? { expires_at: `${expires.value}T23:59:59Z` } : {}) });
        reload();
      }),
      form(t.quotasForm, [field('quota-second', t.perSecondLabel, perSecond), field('quota-minute', t.perMinuteLabel, perMinute)], t.saveQuotas, async () => {
        const n = (v: string) => (v.trim() === '' ? null : Number(v));
        await api.call('PATCH', `/organizations/${orgId}`, { quota_per_second: n(perSecond.value), quota_per_minute: n(perMinute.value) });
        reload();
      }),
      h('section', { class: 'panel' }, h('h2', {}, t.people), people(accounts.data, reload)),
      form(t.addPerson, [field('acct-email', t.email, email), field('acct-name', t.name, person), field('acct-password', t.passwordHint, password)], t.add, async () => {
        await api.call('POST', `/organizations/${orgId}/accounts`, { email: email.value, name: person.value, password: password.value });
        reload();
      }),
    );
  }

  export async function catalog(main: HTMLElement): Promise<void> {
    const c = await api.call('GET', '/catalog');
    const rows: ui.Child[][] = [];
    const named = i18n.named;
    for (const m of c.models) for (const r of m.routes) rows.push([m.id, named(t.protocol, r.protocol), r.supplier, named(t.wireProtocol, r.wire_protocol), r.upstream_model, String(r.priority), named(t.circuit, r.circuit)]);
    main.replaceChildren(
      h('h1', {}, t.catalogRevision(c.revision, c.stale)),
      h('section', { class: 'panel' }, h('h2', {}, t.routes), views.table(t.routesCols, rows, t.routes)),
      h('section', { class: 'panel' }, h('h2', {}, t.suppliers),
        views.table(t.suppliersCols, c.suppliers.map((s: any) => [s.name, named(t.wireProtocol, s.wire_protocol), s.base_url, named(t.protocol, s.protocols), s.credential_env ?? t.none]), t.suppliers)),
    );
  }
}
