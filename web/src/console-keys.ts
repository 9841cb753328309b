// The keys screen: list with liveness, fragments, name, version, scope,
// quota, expiry and funding; create and edit with scope (models chosen by
// name), quota (requests per minute), expiry and funding (the secret shown once, held only in this function's
// variables, so a reload cannot show it again); edit with the version check;
// revoke after confirmation; one key by URL.
namespace keysView {
  const h = ui.h;
  const t = i18n.t;

  function scopeText(scope: any, names: catalogNames.Names): string {
    if (scope === 'unrestricted' || scope == null) return t.unrestricted;
    const parts: string[] = [];
    if (scope.model_ids) parts.push(t.modelsScope(scope.model_ids.map(names.modelName).join(', ')));
    if (scope.modality_codes) parts.push(t.modalitiesScope(scope.modality_codes.map((c: string) => t.modality[c] ?? c).join(', ')));
    if (scope.vendor_ids) parts.push(t.vendorsScope(scope.vendor_ids.map(names.vendorName).join(', ')));
    return parts.join('; ');
  }

  function quotaText(key: any): string {
    return key.quota_per_minute == null ? t.noKeyQuota : `${i18n.int(key.quota_per_minute)}${t.perMinute}`;
  }

  function expiryText(key: any): string {
    return key.expires_at ? i18n.date(key.expires_at) : t.never;
  }

  /**
   * The fields a key is made of, for the create and the edit form: name,
   * funding, the models it may call (ticked by name; sent as the catalog's
   * model ids), its quota of requests per minute and the last day it works. `body()` is what the API takes.
   */
  function keyFields(prefix: string, suffix: string, names: catalogNames.Names, key: any | null): { el: HTMLElement; body(): Record<string, unknown> } {
    const name = h('input', { id: `${prefix}-name${suffix}`, value: key?.name, maxlength: 200, required: true }) as HTMLInputElement;
    const funding = h('select', { id: `${prefix}-funding${suffix}` }, ...['balance', 'package'].map((f) => h('option', { value: f }, t.fundingValue[f]))) as HTMLSelectElement;
    funding.value = key?.funding ?? 'balance';
    const chosen = new Set<string>(key?.scope?.model_ids ?? []);
    const boxes = names.models.map((m) => {
      const box = h('input', { type: 'checkbox', id: `${prefix}-model${suffix}-${m.name}`, value: m.id, checked: chosen.has(m.id) }) as HTMLInputElement;
      const price = m.price === '' ? [] : [h('br', {}), h('small', { class: 'price' }, m.price)];
      return { box, el: h('label', { class: 'check', for: box.id }, box, h('span', {}, m.label, ' ', h('code', {}, m.name), ...price)) };
    });
    const expires = h('input', { id: `${prefix}-expires${suffix}`, type: 'date', value: key?.expires_at ? key.expires_at.slice(0, 10) : undefined }) as HTMLInputElement;
    const quota = h('input', { id: `${prefix}-quota${suffix}`, type: 'number', min: 1, max: 1000000, step: 1, inputmode: 'numeric', value: key?.quota_per_minute ?? undefined }) as HTMLInputElement;
    const el = h('div', {},
      h('div', { class: 'form-row' },
        h('div', {}, h('label', { for: name.id }, t.name), name),
        h('div', {}, h('label', { for: funding.id }, t.funding), funding),
        h('div', {}, h('label', { for: quota.id }, t.keyQuota), quota),
        h('div', {}, h('label', { for: expires.id }, t.expiresOn), expires),
      ),
      h('fieldset', { class: 'scope' }, h('legend', {}, t.scopeHint), h('div', { class: 'checks' }, ...boxes.map((b) => b.el))),
    );
    return {
      el,
      body() {
        const ids = boxes.filter((b) => b.box.checked).map((b) => b.box.value);
        return {
          name: name.value,
          funding: funding.value,
          scope: ids.length > 0 ? { model_ids: ids } : null,
          // The key works to the end of the chosen day, UTC.
          expires_at: expires.value ? `${expires.value}T23:59:59Z` : null,
          // Sent as typed (a whole number is a number): the API says what is wrong with anything else.
          quota_per_minute: quota.value.trim() === '' ? null : /^\d+$/.test(quota.value.trim()) ? Number(quota.value.trim()) : quota.value,
        };
      },
    };
  }

  function editForm(key: any, names: catalogNames.Names, done: () => void): HTMLElement {
    const fields = keyFields('edit', `-${key.id}`, names, key);
    const status = h('div', {});
    const form = h('form', { class: 'panel', 'aria-label': t.editKey(key.name) },
      h('h3', {}, t.editTitle(key.name, key.version)),
      fields.el,
      status,
      h('div', { class: 'row-actions' }, h('button', { type: 'submit' }, t.save), h('button', { type: 'button', class: 'secondary', onclick: done }, t.cancel)),
    );
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const body = fields.body();
      // An edit that leaves the expiry empty keeps the key's (null would be "never" only for a key that has none).
      if (body.expires_at === null && key.expires_at === null) delete body.expires_at;
      if (body.quota_per_minute === null && key.quota_per_minute === null) delete body.quota_per_minute;
      try {
        await api.call('PATCH', `/keys/${key.id}`, { version: key.version, ...body });
        views.announce(t.keySaved);
        done();
      } catch (err) {
        status.replaceChildren(
          err instanceof api.ApiError && err.code === 'version_conflict'
            ? views.errorBox(t.conflict, h('button', { type: 'button', class: 'secondary', onclick: done }, t.reloadKey))
            : views.errorBox(err),
        );
      }
    });
    return form;
  }

  /** The keys of `orgId`; `base` is the operator's tab path of that organization (null for its own people). */
  export async function render(main: HTMLElement, orgId: string, base: string | null): Promise<void> {
    let secret: { name: string; value: string } | null = null;
    let editing: string | null = null;
    let cursor: string | null = null;
    const cursors: Array<string | null> = [];
    const [org, names] = await Promise.all([api.call('GET', `/organizations/${orgId}`), catalogNames.get()]);

    const draw = async (): Promise<void> => {
      const list = await api.call('GET', `/organizations/${orgId}/keys${api.qs({ limit: 20, cursor })}`);
      const created = h('div', {});
      if (secret !== null) {
        created.append(
          h('div', { class: 'secret-box', role: 'status' },
            h('strong', {}, t.created(secret.name)),
            h('code', { id: 'new-secret' }, secret.value),
            h('button', { type: 'button', 'data-copy': 'new-secret', 'data-copied': t.copied }, t.copySecret),
          ),
        );
      }
      const fields = keyFields('new-key', '', names, null);
      const createStatus = h('div', {});
      const createForm = h('form', { class: 'panel', 'aria-labelledby': 'create-title' },
        h('h2', { id: 'create-title' }, t.createKeyTitle),
        fields.el,
        h('p', { class: 'hint' }, t.keyQuotas(views.quotaText(org.quotas))),
        createStatus,
        h('button', { type: 'submit' }, t.createKey),
      );
      createForm.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        const body = fields.body();
        if (body.expires_at === null) delete body.expires_at;
        if (body.quota_per_minute === null) delete body.quota_per_minute;
        try {
          const key = await api.call('POST', `/organizations/${orgId}/keys`, body);
          secret = { name: key.name, value: key.secret };
          views.announce(t.keyCreated);
          await draw();
        } catch (err) {
          createStatus.replaceChildren(views.errorBox(err));
        }
      });
      const rows = list.data.map((k: any) => [
        h('a', { href: `#/keys/${k.id}` }, k.name),
        h('code', {}, k.display),
        h('span', { class: `status-${k.status}` }, t.keyStatus[k.status] ?? k.status),
        String(k.version),
        scopeText(k.scope, names),
        quotaText(k),
        expiryText(k),
        t.fundingValue[k.funding] ?? k.funding,
        k.status === 'live'
          ? h('div', { class: 'row-actions' },
              h('button', { type: 'button', class: 'secondary', 'aria-label': t.editNamed(k.name), onclick: () => { editing = k.id; void draw(); } }, t.edit),
              h('button', { type: 'button', class: 'danger', 'aria-label': t.revokeNamed(k.name), onclick: async () => {
                if (!window.confirm(t.confirmRevoke(k.name))) return;
                await api.call('POST', `/keys/${k.id}/revoke`);
                views.announce(t.revoked(k.name));
                secret = null;
                await draw();
              } }, t.revoke))
          : '',
      ]);
      const edited = editing === null ? null : list.data.find((k: any) => k.id === editing);
      main.replaceChildren(
        ...(base === null ? [h('h1', {}, t.apiKeys)] : views.orgHeader(org, base, 'keys')),
        created,
        edited ? editForm(edited, names, () => { editing = null; void draw(); }) : '',
        h('section', { class: 'panel', 'aria-labelledby': 'keys-title' }, h('h2', { id: 'keys-title' }, base === null ? t.keys : t.apiKeysOf(org.name)),
          rows.length === 0 && cursor === null
            ? views.empty(t.noKeys)
            : views.table([t.name, t.fragments, t.status, t.version, t.scope, t.quota, t.expiresAt, t.funding, t.actions], rows, t.keysCaption),
          views.pager(
            { disabled: cursors.length === 0, label: t.previousPage, go: () => { cursor = cursors.pop() ?? null; void draw(); } },
            { disabled: !list.has_more, label: t.nextPage, go: () => { cursors.push(cursor); cursor = list.next_cursor; void draw(); } })),
        createForm,
      );
      ui.wireCopyButtons(main);
    };
    await draw();
  }

  export async function renderOne(main: HTMLElement, keyId: string): Promise<void> {
    try {
      const [k, names] = await Promise.all([api.call('GET', `/keys/${encodeURIComponent(keyId)}`), catalogNames.get()]);
      main.replaceChildren(
        h('h1', {}, t.keyTitle(k.name)),
        h('dl', { class: 'facts panel' },
          h('dt', {}, t.status), h('dd', { class: `status-${k.status}` }, t.keyStatus[k.status] ?? k.status),
          h('dt', {}, t.fragments), h('dd', {}, h('code', {}, k.display)),
          h('dt', {}, t.version), h('dd', {}, String(k.version)),
          h('dt', {}, t.scope), h('dd', {}, scopeText(k.scope, names)),
          h('dt', {}, t.quota), h('dd', {}, quotaText(k)),
          h('dt', {}, t.expiresAt), h('dd', {}, expiryText(k)),
          h('dt', {}, t.funding), h('dd', {}, t.fundingValue[k.funding] ?? k.funding),
          h('dt', {}, t.createdAt), h('dd', { title: k.created_at }, i18n.dateTime(k.created_at)),
        ),
        h('a', { href: '#/keys' }, t.allKeys),
      );
    } catch (err) {
      main.replaceChildren(h('h1', {}, t.key), views.errorBox(err), h('a', { href: '#/keys' }, t.allKeys));
    }
  }
}
