// The usage screen: spend per day (console-chart.ts), filters (key, model by
// name, day) and the usage rows, newest first, money in the account currency.
namespace usageView {
  const h = ui.h;
  const t = i18n.t;

  /** The usage of `orgId`; `base` is the operator's tab path of that organization (null for its own people). */
  export async function render(main: HTMLElement, orgId: string, base: string | null): Promise<void> {
    const filter = { key_id: '', model: '', day: '' };
    let cursor: string | null = null;
    const cursors: Array<string | null> = [];
    const [keys, names, org] = await Promise.all([
      api.call('GET', `/organizations/${orgId}/keys?limit=200`),
      catalogNames.get(),
      base === null ? Promise.resolve(null) : api.call('GET', `/organizations/${orgId}`),
    ]);
    const heading = () => (base === null ? [h('h1', {}, t.usage)] : views.orgHeader(org, base, 'usage'));

    const draw = async (): Promise<void> => {
      let page: any;
      let daily: any;
      const model = names.modelId(filter.model) ?? filter.model;
      try {
        [page, daily] = await Promise.all([
          api.call('GET', `/organizations/${orgId}/usage${api.qs({ limit: 25, cursor, ...filter, model })}`),
          api.call('GET', `/organizations/${orgId}/usage/daily${api.qs({ days: 30, key_id: filter.key_id, model })}`),
        ]);
      } catch (err) {
        main.replaceChildren(...heading(), views.errorBox(err));
        return;
      }
      const keySelect = h('select', { id: 'f-key' }, h('option', { value: '' }, t.everyKey), ...keys.data.map((k: any) => h('option', { value: k.id }, `${k.name} (${k.display})`))) as HTMLSelectElement;
      keySelect.value = filter.key_id;
      const modelInput = h('input', { id: 'f-model', value: filter.model, placeholder: t.modelExample, list: 'f-models' }) as HTMLInputElement;
      const modelList = h('datalist', { id: 'f-models' }, ...names.models.map((m) => h('option', { value: m.name }, m.label)));
      const day = h('input', { id: 'f-day', type: 'date', value: filter.day }) as HTMLInputElement;
      const form = h('form', { class: 'panel', 'aria-label': t.filterUsage },
        h('div', { class: 'form-row' },
          h('div', {}, h('label', { for: 'f-key' }, t.key), keySelect),
          h('div', {}, h('label', { for: 'f-model' }, t.model), modelInput, modelList),
          h('div', {}, h('label', { for: 'f-day' }, t.day), day),
          h('div', {}, h('button', { type: 'submit' }, t.applyFilters)),
        ),
      );
      form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        filter.key_id = keySelect.value;
        filter.model = modelInput.value.trim();
        filter.day = day.value;
        cursor = null;
        cursors.length = 0;
        void draw();
      });
      const keyName = new Map<string, string>(keys.data.map((k: any) => [k.id, k.name]));
      const rows = page.data.map((r: any) => [
        h('time', { datetime: r.finished_at, title: r.finished_at }, i18n.dateTime(r.finished_at)),
        keyName.get(r.key_id) ?? r.key_id.slice(0, 8),
        names.modelName(r.model_id),
        i18n.named(t.protocol, r.surface),
        i18n.int(r.input_tokens),
        i18n.int(r.output_tokens),
        money.el(r.charged),
        i18n.named(t.outcomeName, r.outcome),
      ]);
      main.replaceChildren(
        ...heading(),
        chartView.render(daily),
        form,
        h('section', { class: 'panel', 'aria-labelledby': 'usage-title' },
          h('h2', { id: 'usage-title' }, t.requestsTotal(page.total_requests, money.text(page.total_charged))),
          rows.length === 0
            ? views.empty(t.noUsage)
            : views.table([t.finished, t.key, t.model, t.surface, t.input, t.output, t.charged, t.outcome], rows, t.usageCaption, [4, 5, 6]),
          views.pager(
            { disabled: cursors.length === 0, label: t.newer, go: () => { cursor = cursors.pop() ?? null; void draw(); } },
            { disabled: !page.has_more, label: t.older, go: () => { cursors.push(cursor); cursor = page.next_cursor; void draw(); } }),
        ),
      );
    };
    await draw();
  }
}
