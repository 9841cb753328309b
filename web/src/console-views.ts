// Pieces the console screens share: an error box, a table, the money figures
// of an organization.
namespace views {
  const h = ui.h;

  export function errorBox(err: unknown, extra?: Node): HTMLElement {
    const message = err instanceof api.ApiError ? err.message : String(err);
    return h('div', { class: 'error-box', role: 'alert' }, message, extra ? ' ' : '', extra ?? '');
  }

  export function table(headers: string[], rows: Array<Array<ui.Child>>, caption: string, numeric: number[] = []): HTMLElement {
    return h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        {},
        h('caption', { class: 'visually-hidden' }, caption),
        h('thead', {}, h('tr', {}, ...headers.map((t, i) => h('th', { scope: 'col', class: numeric.includes(i) ? 'num' : undefined }, t)))),
        h('tbody', {}, ...rows.map((r) => h('tr', {}, ...r.map((c, i) => h('td', { class: numeric.includes(i) ? 'num' : undefined }, c))))),
      ),
    );
  }

  function figure(label: string, value: string, note?: string): HTMLElement {
    return h('div', { class: 'figure' }, h('div', { class: 'label' }, label), h('div', { class: 'value' }, value), note ? h('div', { class: 'label' }, note) : null);
  }

  export function moneyFigures(org: any): HTMLElement {
    const expiry = org.package_expires_at ? (org.package_expired ? `expired ${org.package_expires_at.slice(0, 10)}` : `expires ${org.package_expires_at.slice(0, 10)}`) : 'no expiry';
    return h(
      'div',
      { class: 'figures' },
      figure('Balance', org.balance, `available ${org.available}`),
      figure('Held by open requests', org.held, `${org.open_holds} open hold${org.open_holds === 1 ? '' : 's'}`),
      figure('Package allowance', org.package, `${expiry}; held ${org.package_held}`),
      figure('Quotas', `${org.quotas.per_second}/s · ${org.quotas.per_minute}/min`, `${org.quotas.per_second_source} / ${org.quotas.per_minute_source}`),
    );
  }

  export function announce(text: string): void {
    const live = document.getElementById('live');
    if (live) live.textContent = text;
  }
}
