// The operator's screens: organizations (search, paging, create), one
// organization (money, credit, quotas, accounts, then its keys and usage as
// its people see them), and the published catalog, read-only.
namespace operatorView {
  const h = ui.h;

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

  export async function orgs(main: HTMLElement): Promise<void> {
    let q = '';
    let cursor: string | null = null;
    const cursors: Array<string | null> = [];
    const draw = async (): Promise<void> => {
      const list = await api.call('GET', `/organizations${api.qs({ limit: 20, cursor, q })}`);
      const search = h('input', { type: 'search', value: q }) as HTMLInputElement;
      const name = h('input', { required: true, maxlength: 200 }) as HTMLInputElement;
      const balance = h('input', { placeholder: '0.00', inputmode: 'decimal' }) as HTMLInputElement;
      const searchForm = h('form', { class: 'panel', role: 'search', 'aria-label': 'Search organizations' },
        h('div', { class: 'form-row' }, field('org-search', 'Name contains', search), h('div', {}, h('button', { type: 'submit' }, 'Search'))));
      searchForm.addEventListener('submit', (ev) => {
        ev.preventDefault();
        q = search.value.trim();
        cursor = null;
        cursors.length = 0;
        void draw();
      });
      const rows = list.data.map((o: any) => [h('a', { href: `#/orgs/${o.id}` }, o.name), o.balance ?? '—', o.held ?? '—', String(o.open_holds ?? '—'), o.package ?? '—', o.created_at.slice(0, 10)]);
      main.replaceChildren(
        h('h1', {}, 'Organizations'),
        searchForm,
        h('section', { class: 'panel' },
          views.table(['Name', 'Balance', 'Held', 'Open holds', 'Package', 'Created'], rows, 'Organizations', [1, 2, 3, 4]),
          h('div', { class: 'pager' },
            h('button', { type: 'button', class: 'secondary', disabled: cursors.length === 0, onclick: () => { cursor = cursors.pop() ?? null; void draw(); } }, 'Previous page'),
            h('button', { type: 'button', class: 'secondary', disabled: !list.has_more, onclick: () => { cursors.push(cursor); cursor = list.next_cursor; void draw(); } }, 'Next page'))),
        form('Create an organization', [field('org-name', 'Name', name), field('org-balance', 'Opening balance', balance)], 'Create', async () => {
          const org = await api.call('POST', '/organizations', { name: name.value, ...(balance.value ? { balance: balance.value } : {}) });
          location.hash = `#/orgs/${org.id}`;
        }),
      );
    };
    await draw();
  }

  export async function org(main: HTMLElement, orgId: string): Promise<void> {
    const o = await api.call('GET', `/organizations/${encodeURIComponent(orgId)}`);
    const accounts = await api.call('GET', `/organizations/${orgId}/accounts`);
    const amount = h('input', { required: true, inputmode: 'decimal', placeholder: '10.00' }) as HTMLInputElement;
    const target = h('select', {}, h('option', { value: 'balance' }, 'balance'), h('option', { value: 'package' }, 'package')) as HTMLSelectElement;
    const expires = h('input', { type: 'date' }) as HTMLInputElement;
    const perSecond = h('input', { inputmode: 'numeric', value: o.quotas.per_second_source === 'organization' ? String(o.quotas.per_second) : '' }) as HTMLInputElement;
    const perMinute = h('input', { inputmode: 'numeric', value: o.quotas.per_minute_source === 'organization' ? String(o.quotas.per_minute) : '' }) as HTMLInputElement;
    const email = h('input', { type: 'email', required: true }) as HTMLInputElement;
    const person = h('input', { required: true }) as HTMLInputElement;
    const password = h('input', { type: 'password', required: true, minlength: 10, autocomplete: 'new-password' }) as HTMLInputElement;
    const reload = () => void org(main, orgId);
    main.replaceChildren(
      h('h1', {}, o.name),
      views.moneyFigures(o),
      h('p', {}, h('a', { href: `#/orgs/${orgId}/keys` }, 'Keys'), ' · ', h('a', { href: `#/orgs/${orgId}/usage` }, 'Usage')),
      form('Credit', [field('credit-amount', 'Amount', amount), field('credit-target', 'To', target), field('credit-expires', 'Package expires (optional)', expires)], 'Credit', async () => {
        await api.call('POST', `/organizations/${orgId}/credits`, { amount: amount.value, target: target.value, ...(expires.value ? { expires_at: `${expires.value}T23:59:59Z` } : {}) });
        reload();
      }),
      form('Quotas (empty = the default)', [field('quota-second', 'Requests per second', perSecond), field('quota-minute', 'Requests per minute', perMinute)], 'Save quotas', async () => {
        const n = (v: string) => (v.trim() === '' ? null : Number(v));
        await api.call('PATCH', `/organizations/${orgId}`, { quota_per_second: n(perSecond.value), quota_per_minute: n(perMinute.value) });
        reload();
      }),
      h('section', { class: 'panel' }, h('h2', {}, 'People'),
        views.table(['Name', 'Email', 'Status', 'Created', ''], accounts.data.map((a: any) => [a.name, a.email, a.status, a.created_at.slice(0, 10),
          a.status === 'active' ? h('button', { type: 'button', class: 'danger', onclick: async () => {
            if (window.confirm(`Disable ${a.email}? Their sessions end at once.`)) { await api.call('POST', `/accounts/${a.id}/disable`); reload(); }
          } }, 'Disable') : '']), 'People of the organization')),
      form('Add a person', [field('acct-email', 'Email', email), field('acct-name', 'Name', person), field('acct-password', 'Password (10+ characters)', password)], 'Add', async () => {
        await api.call('POST', `/organizations/${orgId}/accounts`, { email: email.value, name: person.value, password: password.value });
        reload();
      }),
    );
  }

  export async function catalog(main: HTMLElement): Promise<void> {
    const c = await api.call('GET', '/catalog');
    const rows: ui.Child[][] = [];
    for (const m of c.models) for (const r of m.routes) rows.push([m.id, r.protocol, r.supplier, r.wire_protocol, r.upstream_model, String(r.priority), r.circuit]);
    main.replaceChildren(
      h('h1', {}, `Catalog revision ${c.revision}${c.stale ? ' (stale: the store cannot be read)' : ''}`),
      h('section', { class: 'panel' }, h('h2', {}, 'Routes'), views.table(['Model', 'Protocol', 'Supplier', 'Wire', 'Upstream model', 'Priority', 'Circuit (this worker)'], rows, 'Published routes')),
      h('section', { class: 'panel' }, h('h2', {}, 'Suppliers'),
        views.table(['Name', 'Wire', 'Base URL', 'Protocols', 'Credential from'], c.suppliers.map((s: any) => [s.name, s.wire_protocol, s.base_url, s.protocols.join(', '), s.credential_env ?? 'none']), 'Suppliers')),
    );
  }
}
