// The spend-per-day chart: one bar per day of the range, zero days included
// (a mark on the axis), a y-axis in the account currency with round steps,
// dated x labels spaced so they never overlap, the last one "today". Drawn at
// the card's pixel width (so its 12 px text stays 12 px on a phone) and drawn
// again when the width changes. The same figures are a table under it, for
// screen readers and anyone who wants the numbers.
namespace chartView {
  const h = ui.h;
  const t = i18n.t;
  const SVG = 'http://www.w3.org/2000/svg';

  export interface Day {
    day: string;
    charged: string;
    requests: number;
  }

  function svg(tag: string, attrs: Record<string, string | number>, text?: string): SVGElement {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    if (text !== undefined) el.textContent = text;
    return el;
  }

  /** A round step (1, 2 or 5 × 10^n) that splits `max` into about four parts. */
  function step(max: number): number {
    const raw = max / 4;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    return [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  }

  function dayLabel(day: string): string {
    return new Date(day + 'T00:00:00Z').toLocaleDateString(i18n.locale, { timeZone: 'UTC', day: 'numeric', month: 'short' });
  }

  function draw(days: Day[], width: number): SVGElement {
    const H = 220;
    const top = 22;
    const bottom = 40;
    // Amounts only for drawing; every figure shown as text comes from the exact decimals.
    const values = days.map((d) => Number(d.charged));
    const max = Math.max(...values, 0);
    const s = max > 0 ? step(max) : 0.01;
    const ticks: number[] = [];
    for (let v = 0; ticks.length < 8; v += s) {
      ticks.push(v);
      if (v >= max) break;
    }
    const yMax = ticks[ticks.length - 1];
    // Two decimals, as every amount; more only when a step is under a cent, so the ticks differ.
    const decimals = Math.min(6, Math.max(2, -Math.floor(Math.log10(s))));
    const labels = ticks.map((v) => money.units(v, decimals));
    const left = Math.max(...labels.map((l) => l.length)) * 7 + 12;
    const right = 8;
    const plotW = Math.max(width - left - right, 60);
    const plotH = H - top - bottom;
    const y = (v: number) => top + plotH - (yMax > 0 ? (v / yMax) * plotH : 0);
    const root = svg('svg', { width, height: H, viewBox: `0 0 ${width} ${H}`, 'aria-hidden': 'true', focusable: 'false' });
    root.append(svg('text', { class: 'axis-title', x: 0, y: 12 }, `${t.spent}, ${money.currency()}`));
    ticks.forEach((v, i) => {
      root.append(svg('line', { class: 'grid', x1: left, x2: left + plotW, y1: y(v), y2: y(v) }));
      root.append(svg('text', { class: 'y-label', x: left - 6, y: y(v) + 4, 'text-anchor': 'end' }, labels[i]));
    });
    const bw = plotW / Math.max(days.length, 1);
    // Label every n-th day counting back from today, so today is always labelled and labels never touch.
    const every = Math.max(1, Math.ceil(60 / bw));
    days.forEach((d, i) => {
      const v = values[i];
      const x = left + i * bw;
      const zero = !(v > 0);
      const bh = zero ? 2 : Math.max(y(0) - y(v), 1);
      const bar = svg('rect', { class: zero ? 'bar zero' : 'bar', 'data-day': d.day, x: (x + bw * 0.15).toFixed(1), y: (y(0) - bh).toFixed(1), width: Math.max(bw * 0.7, 1).toFixed(1), height: bh.toFixed(1) });
      bar.append(svg('title', {}, `${dayLabel(d.day)}: ${money.text(d.charged)} (${money.exact(d.charged)}), ${t.requestsCol.toLowerCase()}: ${i18n.int(d.requests)}`));
      root.append(bar);
      const fromEnd = days.length - 1 - i;
      // The label next to today's (which ends at the axis's end) is left out when it would touch it.
      if (fromEnd % every === 0 && (fromEnd === 0 || fromEnd * bw >= 72)) {
        root.append(svg('line', { class: 'tick', x1: x + bw / 2, x2: x + bw / 2, y1: y(0), y2: y(0) + 4 }));
        // Today's label ends at the axis's end, so it is never cut off.
        const last = fromEnd === 0;
        root.append(svg('text', { class: 'x-label', x: last ? left + plotW : x + bw / 2, y: y(0) + 18, 'text-anchor': last ? 'end' : 'middle' }, last ? t.today : dayLabel(d.day)));
      }
    });
    root.append(svg('line', { class: 'axis', x1: left, x2: left + plotW, y1: y(0), y2: y(0) }));
    root.append(svg('line', { class: 'axis', x1: left, x2: left, y1: top, y2: y(0) }));
    root.append(svg('text', { class: 'axis-title', x: left + plotW, y: H - 4, 'text-anchor': 'end' }, t.day));
    return root;
  }

  let onResize: (() => void) | null = null;

  export function render(daily: { total_charged: string; data: Day[] }): HTMLElement {
    const days = daily.data;
    let highest = days[0]?.charged ?? '0.00';
    for (const d of days) if ((money.micros(d.charged) ?? 0n) > (money.micros(highest) ?? 0n)) highest = d.charged;
    const plot = h('div', { class: 'plot' });
    const table = views.table([t.day, t.spent, t.requestsCol], days.map((d) => [d.day, money.el(d.charged), i18n.int(d.requests)]), t.spendTitle(days.length), [1, 2]);
    const section = h('section', { class: 'panel chart', 'aria-labelledby': 'chart-title' },
      h('h2', { id: 'chart-title' }, t.spendTitle(days.length)),
      h('p', { class: 'chart-summary' }, t.total, ' ', money.el(daily.total_charged), '; ', t.highest, ' ', money.el(highest), '.'),
      plot,
      h('details', {}, h('summary', {}, t.showTable), table),
    );
    let drawnAt = -1;
    const redraw = () => {
      const width = Math.floor(plot.clientWidth);
      if (width === drawnAt || width === 0) return;
      drawnAt = width;
      plot.replaceChildren(draw(days, width));
    };
    // Drawn once the card is in the page (its width known), then on every width change.
    requestAnimationFrame(redraw);
    if (onResize !== null) window.removeEventListener('resize', onResize);
    onResize = redraw;
    window.addEventListener('resize', redraw);
    return section;
  }
}
