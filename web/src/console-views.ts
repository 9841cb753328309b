// Pieces the console screens share: an error box (in the page's language), a
// table that becomes one card per row on a phone (each cell labelled by its
// column), the money figures of an organization, and the tabs of one
// organization's pages.
namespace views {
  const h = ui.h;
  const t = i18n.t;

  export function errorBox(err: unknown, extra?: Node): HTMLElement {
    let message = String(err);
    let details: string[] = [];
    if (err instanceof api.ApiError) {
      // The page's own sentence for the code where its language has one (ru: a
      // Russian lead), else the API's message, which states the field rules
      // itself. Then each rule the lead does not state, as the API words it:
      // the rules are English in every language (no translation table for them).
      message = t.errors[err.code] ?? err.message;
      details = err.details.filter((d) => !message.includes(d));
    }
    return h('div', { class: 'error-box', role: 'alert' }, message, extra ? ' ' : '', extra ?? '',
      details.length > 0 ? h('ul', {}, ...details.map((d) => h('li', {}, d))) : null);
  }

  /**
   * A data table. Under the phone breakpoint (app.css) each row is a card and
   * each cell shows its column's name (data-label), so nothing, the actions
   * included, is off to the side.
   */
  export function table(headers: string[], rows: Array<Array<ui.Child>>, caption: string, numeric: number[] = []): HTMLElement {
    const cls = (i: number) => (numeric.includes(i) ? 'num' : undefined);
    return h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'stack' },
        h('caption', { class: 'visually-hidden' }, caption),
        h('thead', {}, h('tr', {}, ...headers.map((text, i) => h('th', { scope: 'col', class: cls(i) }, text)))),
        h('tbody', {}, ...rows.map((r) => h('tr', {}, ...r.map((c, i) => h('td', { class: cls(i), 'data-label': headers[i] || undefined }, c))))),
      ),
    );
  }

  /** A paragraph for a list with nothing in it. */
  export function empty(text: string): HTMLElement {
    return h('p', { class: 'empty' }, text);
  }

  function figure(label: string, value: ui.Child, note?: ui.Child): HTMLElement {
    return h('div', { class: 'figure' }, h('div', { class: 'label' }, label), h('div', { class: 'value' }, value), note ? h('div', { class: 'label' }, note) : null);
  }

  export function quotaText(q: any): string {
    return `${i18n.int(q.per_second)}${t.perSecond} · ${i18n.int(q.per_minute)}${t.perMinute}`;
  }

  export function moneyFigures(org: any): HTMLElement {
    const exp = org.package_expires_at;
    const expiry = exp ? (org.package_expired ? t.expired(i18n.date(exp)) : t.expires(i18n.date(exp))) : t.noExpiry;
    const q = org.quotas;
    const source = (s: string) => t.source[s] ?? s;
    return h(
      'div',
      { class: 'figures' },
      figure(t.balance, money.el(org.balance), h('span', {}, t.available(''), money.el(org.available))),
      figure(t.heldByOpen, money.el(org.held), i18n.plural(org.open_holds, t.openHolds)),
      figure(t.packageAllowance, money.el(org.package), h('span', {}, `${expiry}; `, t.heldAmount(''), money.el(org.package_held))),
      figure(t.quotas, quotaText(q), q.per_second_source === q.per_minute_source ? source(q.per_second_source) : `${source(q.per_second_source)} / ${source(q.per_minute_source)}`),
    );
  }

  /** One organization's pages as tabs, under a heading that names it. */
  export function orgHeader(org: any, base: string, current: 'overview' | 'keys' | 'usage'): HTMLElement[] {
    const tabs: Array<[string, string, string]> = [
      ['overview', base, t.overview],
      ['keys', `${base}/keys`, t.keys],
      ['usage', `${base}/usage`, t.usage],
    ];
    return [
      h('h1', {}, org.name),
      h('nav', { class: 'tabs', 'aria-label': t.orgSections },
        ...tabs.map(([id, href, label]) => h('a', { href, 'aria-current': id === current ? 'page' : undefined }, label))),
    ];
  }

  export function pager(prev: { disabled: boolean; label: string; go: () => void }, next: { disabled: boolean; label: string; go: () => void }): HTMLElement {
    return h('div', { class: 'pager' },
      h('button', { type: 'button', class: 'secondary', disabled: prev.disabled, onclick: prev.go }, prev.label),
      h('button', { type: 'button', class: 'secondary', disabled: next.disabled, onclick: next.go }, next.label));
  }

  export function announce(text: string): void {
    const live = document.getElementById('live');
    if (live) live.textContent = text;
  }
}
