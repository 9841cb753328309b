// The keys screen: list with liveness, fragments, name, version, scope and
// funding; create (the secret shown once, held only in this function's
// variables, so a reload cannot show it again); edit with the version check;
// revoke after confirmation; one key by URL.
namespace keysView {
  const h = ui.h;

  function scopeText(scope: any): string {
    if (scope === 'unrestricted' || scope == null) return 'unrestricted';
    return Object.entries(scope)
      .map(([k, v]) => `${k}: ${(v as string[]).join(', ')}`)
      .join('; ');
  }

  function editForm(key: any, done: () => void): HTMLElement {
    const id = key.id;
    const name = h('input', { id: `edit-name-${id}`, value: key.name, maxlength: 200, required: true }) as HTMLInputElement;
    const funding = h('select', { id: `edit-funding-${id}` }, h('option', { value: 'balance' }, 'balance'), h('option', { value: 'package' }, 'package')) as HTMLSelectElement;
    funding.value = key.funding;
    const models = h('input', {
      id: `edit-models-${id}`,
      value: key.scope !== 'unrestricted' && key.scope?.model_ids ? key.scope.model_ids.join(', ') : '',
      placeholder: 'empty = every model',
    }) as HTMLInputElement;
    const status = h('div', {});
    const form = h(
      'form',
      { class: 'panel', 'aria-label': `Edit key ${key.name}` },
      h('h3', {}, `Edit “${key.name}” (version ${key.version})`),
      h('div', { class: 'form-row' },
        h('div', {}, h('label', { for: `edit-name-${id}` }, 'Name'), name),
        h('div', {}, h('label', { for: `edit-funding-${id}` }, 'Funding'), funding),
        h('div', {}, h('label', { for: `edit-models-${id}` }, 'Allowed model ids (comma-separated)'), models),
      ),
      status,
      h('div', { class: 'row-actions' }, h('button', { type: 'submit' }, 'Save'), h('button', { type: 'button', class: 'secondary', onclick: done }, 'Cancel')),
    );
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const ids = models.value.split(',').map((s) => s.trim()).filter((s) => s !== '');
      try {
        await api.call('PATCH', `/keys/${id}`, { version: key.version, name: name.value, funding: funding.value, scope: ids.length > 0 ? { model_ids: ids } : null });
        views.announce('Key saved');
        done();
      } catch (err) {
        status.replaceChildren(
          err instanceof api.ApiError && err.code === 'version_conflict'
            ? views.errorBox('Someone else changed this key since you opened it.', h('button', { type: 'button', class: 'secondary', onclick: done }, 'Reload the key'))
            : views.errorBox(err),
        );
      }
    });
    return form;
  }

  export async function render(main: HTMLElement, orgId: string): Promise<void> {
    let secret: { name: string; value: string } | null = null;
    let editing: string | null = null;
    let cursor: string | null = null;
    const cursors: Array<string | null> = [];

    const draw = async (): Promise<void> => {
      const list = await api.call('GET', `/organizations/${orgId}/keys${api.qs({ limit: 20, cursor })}`);
      const created = h('div', {});
      if (secret !== null) {
        created.append(
          h('div', { class: 'secret-box', role: 'status' },
            h('strong', {}, `Key “${secret.name}” created. Copy its secret now: it is shown this once and never again.`),
            h('code', { id: 'new-secret' }, secret.value),
            h('button', { type: 'button', 'data-copy': 'new-secret', 'data-copied': 'Copied' }, 'Copy secret'),
          ),
        );
      }
      const nameInput = h('input', { id: 'new-key-name', required: true, maxlength: 200 }) as HTMLInputElement;
      const fundingInput = h('select', { id: 'new-key-funding' }, h('option', { value: 'balance' }, 'balance'), h('option', { value: 'package' }, 'package')) as HTMLSelectElement;
      const createStatus = h('div', {});
      const createForm = h('form', { class: 'panel', 'aria-labelledby': 'create-title' },
        h('h2', { id: 'create-title' }, 'Create a key'),
        h('div', { class: 'form-row' },
          h('div', {}, h('label', { for: 'new-key-name' }, 'Name'), nameInput),
          h('div', {}, h('label', { for: 'new-key-funding' }, 'Funding'), fundingInput),
          h('div', {}, h('button', { type: 'submit' }, 'Create key')),
        ),
        createStatus,
      );
      createForm.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        try {
          const key = await api.call('POST', `/organizations/${orgId}/keys`, { name: nameInput.value, funding: fundingInput.value });
          secret = { name: key.name, value: key.secret };
          views.announce('Key created; its secret is shown once');
          await draw();
        } catch (err) {
          createStatus.replaceChildren(views.errorBox(err));
        }
      });
      const rows = list.data.map((k: any) => [
        h('a', { href: `#/keys/${k.id}` }, k.name),
        h('code', {}, k.display),
        h('span', { class: `status-${k.status}` }, k.status),
        String(k.version),
        scopeText(k.scope),
        k.funding,
        k.status === 'live'
          ? h('div', { class: 'row-actions' },
              h('button', { type: 'button', class: 'secondary', 'aria-label': `Edit ${k.name}`, onclick: () => { editing = k.id; void draw(); } }, 'Edit'),
              h('button', { type: 'button', class: 'danger', 'aria-label': `Revoke ${k.name}`, onclick: async () => {
                if (!window.confirm(`Revoke the key “${k.name}”? Calls with it will be refused at once. This cannot be undone.`)) return;
                await api.call('POST', `/keys/${k.id}/revoke`);
                views.announce(`Key ${k.name} revoked`);
                secret = null;
                await draw();
              } }, 'Revoke'))
          : '',
      ]);
      const edited = editing === null ? null : list.data.find((k: any) => k.id === editing);
      const pager = h('div', { class: 'pager' },
        h('button', { type: 'button', class: 'secondary', disabled: cursors.length === 0, onclick: () => { cursor = cursors.pop() ?? null; void draw(); } }, 'Previous page'),
        h('button', { type: 'button', class: 'secondary', disabled: !list.has_more, onclick: () => { cursors.push(cursor); cursor = list.next_cursor; void draw(); } }, 'Next page'),
      );
      main.replaceChildren(
        h('h1', {}, 'API keys'),
        created,
        createForm,
        edited ? editForm(edited, () => { editing = null; void draw(); }) : '',
        h('section', { class: 'panel', 'aria-labelledby': 'keys-title' }, h('h2', { id: 'keys-title' }, 'Keys'),
          views.table(['Name', 'Fragments', 'Status', 'Version', 'Scope', 'Funding', 'Actions'], rows, 'API keys of the organization'), pager),
      );
      ui.wireCopyButtons(main);
    };
    await draw();
  }

  export async function renderOne(main: HTMLElement, keyId: string): Promise<void> {
    try {
      const k = await api.call('GET', `/keys/${encodeURIComponent(keyId)}`);
      main.replaceChildren(
        h('h1', {}, `Key “${k.name}”`),
        h('dl', { class: 'facts panel' },
          h('dt', {}, 'Status'), h('dd', { class: `status-${k.status}` }, k.status),
          h('dt', {}, 'Fragments'), h('dd', {}, h("code", {}, k.display)),
          h('dt', {}, 'Version'), h('dd', {}, String(k.version)),
          h('dt', {}, 'Scope'), h('dd', {}, scopeText(k.scope)),
          h('dt', {}, 'Funding'), h('dd', {}, k.funding),
          h('dt', {}, 'Created'), h('dd', {}, k.created_at),
        ),
        h('a', { href: '#/keys' }, 'All keys'),
      );
    } catch (err) {
      main.replaceChildren(h('h1', {}, 'Key'), views.errorBox(err), h('a', { href: '#/keys' }, 'All keys'));
    }
  }
}
