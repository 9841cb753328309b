// The usage screen: a spend-per-day chart (SVG drawn here, no library), and
// the usage rows with filters (key, model, day) and paging.
namespace usageView {
  const h = ui.h;
  const SVG = 'http://www.w3.org/2000/svg';

  function svg(tag: string, attrs: Record<string, string | number>): SVGElement {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    return el;
  }

  // Amounts are shown as the console API wrote them (exact decimals); Number() is only for drawing.
  function chart(daily: { total_charged: string; data: Array<{ day: string; charged: string; requests: number }> }): HTMLElement {
    const days = daily.data;
    const W = 600;
    const H = 160;
    const max = Math.max(...days.map((d) => Number(d.charged)), 0);
    const highest = days.find((d) => Number(d.charged) === max)?.charged ?? '0.00';
    const root = svg('svg', { viewBox: `0 0 ${W} ${H + 20}`, role: 'img', 'aria-labelledby': 'chart-title' });
    const bw = W / Math.max(days.length, 1);
    days.forEach((d, i) => {
      const v = Number(d.charged);
      const bh = max > 0 ? (v / max) * H : 0;
      const bar = svg('rect', { class: 'bar', x: (i * bw + 1).toFixed(1), y: (H - bh).toFixed(1), width: Math.max(bw - 2, 1).toFixed(1), height: Math.max(bh, v > 0 ? 1 : 0).toFixed(1) });
      const title = svg('title', {});
      title.textContent = `${d.day}: ${d.charged} (${d.requests} requests)`;
      bar.append(title);
      root.append(bar);
      if (i % 7 === 0 && i < days.length - 3) {
        const label = svg('text', { x: (i * bw).toFixed(1), y: H + 14 });
        label.textContent = d.day.slice(5);
        root.append(label);
      }
    });
    return h('section', { class: 'panel chart', 'aria-labelledby': 'chart-title' },
      h('h2', { id: 'chart-title' }, `Spend per day, last ${days.length} days (total ${daily.total_charged}; highest ${highest})`),
      root as unknown as HTMLElement,
    );
  }

  export async function render(main: HTMLElement, orgId: string): Promise<void> {
    const filter = { key_id: '', model: '', day: '' };
    let cursor: string | null = null;
    const cursors: Array<string | null> = [];
    const keys = await api.call('GET', `/organizations/${orgId}/keys?limit=200`);
    // Usage rows name models by model_id; the public list gives their names.
    const models = await fetch('/v1/models').then((r) => r.json()).catch(() => ({ data: [] }));
    const modelName = new Map<string, string>(models.data.map((m: any) => [m.model_id, m.id]));
    const modelId = new Map<string, string>(models.data.map((m: any) => [m.id, m.model_id]));

    const draw = async (): Promise<void> => {
      let page: any;
      let daily: any;
      try {
        [page, daily] = await Promise.all([
          api.call('GET', `/organizations/${orgId}/usage${api.qs({ limit: 25, cursor, ...filter, model: modelId.get(filter.model) ?? filter.model })}`),
          api.call('GET', `/organizations/${orgId}/usage/daily${api.qs({ days: 30, key_id: filter.key_id, model: modelId.get(filter.model) ?? filter.model })}`),
        ]);
      } catch (err) {
        main.replaceChildren(h('h1', {}, 'Usage'), views.errorBox(err));
        return;
      }
      const keySelect = h('select', { id: 'f-key' }, h('option', { value: '' }, 'every key'), ...keys.data.map((k: any) => h('option', { value: k.id }, `${k.name} (${k.display})`))) as HTMLSelectElement;
      keySelect.value = filter.key_id;
      const model = h('input', { id: 'f-model', value: filter.model, placeholder: 'e.g. nw-swift-1' }) as HTMLInputElement;
      const day = h('input', { id: 'f-day', type: 'date', value: filter.day }) as HTMLInputElement;
      const form = h('form', { class: 'panel', 'aria-label': 'Filter usage' },
        h('div', { class: 'form-row' },
          h('div', {}, h('label', { for: 'f-key' }, 'Key'), keySelect),
          h('div', {}, h('label', { for: 'f-model' }, 'Model'), model),
          h('div', {}, h('label', { for: 'f-day' }, 'Day (UTC)'), day),
          h('div', {}, h('button', { type: 'submit' }, 'Apply filters')),
        ),
      );
      form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        filter.key_id = keySelect.value;
        filter.model = model.value.trim();
        filter.day = day.value;
        cursor = null;
        cursors.length = 0;
        void draw();
      });
      const keyName = new Map<string, string>(keys.data.map((k: any) => [k.id, k.name]));
      const rows = page.data.map((r: any) => [
        r.finished_at.replace('T', ' ').slice(0, 19),
        keyName.get(r.key_id) ?? r.key_id.slice(0, 8),
        modelName.get(r.model_id) ?? r.model_id,
        r.surface,
        String(r.input_tokens),
        String(r.output_tokens),
        r.charged,
        r.outcome,
      ]);
      main.replaceChildren(
        h('h1', {}, 'Usage'),
        chart(daily),
        form,
        h('section', { class: 'panel', 'aria-labelledby': 'usage-title' },
          h('h2', { id: 'usage-title' }, `Requests: ${page.total_requests}, charged ${page.total_charged}`),
          rows.length === 0 ? h('p', {}, 'No usage matches.') : views.table(['Finished (UTC)', 'Key', 'Model', 'Surface', 'Input', 'Output', 'Charged', 'Outcome'], rows, 'Usage rows', [4, 5, 6]),
          h('div', { class: 'pager' },
            h('button', { type: 'button', class: 'secondary', disabled: cursors.length === 0, onclick: () => { cursor = cursors.pop() ?? null; void draw(); } }, 'Newer'),
            h('button', { type: 'button', class: 'secondary', disabled: !page.has_more, onclick: () => { cursors.push(cursor); cursor = page.next_cursor; void draw(); } }, 'Older'),
          ),
        ),
      );
    };
    await draw();
  }
}
