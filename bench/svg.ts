// Inline SVG charts for the HTML report: no scripts, no external assets, so
// the page opens anywhere and can be attached to an issue as one file.
export const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#9c755f', '#bab0ac'];

export function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

export interface Series {
  name: string;
  color?: string;
}

export interface Group {
  label: string;
  /** One value per series; null = not measured. */
  values: Array<number | null>;
}

export interface BarChartOptions {
  title: string;
  unit: string;
  series: Series[];
  groups: Group[];
  width?: number;
  /** Digits after the point in value labels. */
  digits?: number;
}

/** Horizontal grouped bars: a row block per group, a bar per series, the value at the bar's end. */
export function barChart(o: BarChartOptions): string {
  const width = o.width ?? 760;
  // Room for the longest group label (~6.2 px per character at 11 px).
  const labelW = Math.max(90, Math.min(320, Math.ceil(Math.max(0, ...o.groups.map((g) => g.label.length)) * 6.2) + 16));
  const valueW = 90;
  const barH = 14;
  const gap = 10;
  const top = 28;
  const legendH = 22;
  const plotW = width - labelW - valueW;
  const max = Math.max(0, ...o.groups.flatMap((g) => g.values.filter((v): v is number => v !== null && Number.isFinite(v))));
  const scale = max > 0 ? plotW / max : 0;
  const blockH = o.series.length * barH + gap;
  const height = top + o.groups.length * blockH + legendH + 8;
  const digits = o.digits ?? (max >= 100 ? 0 : max >= 10 ? 1 : 3);
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${esc(o.title)}" font-family="system-ui,sans-serif" font-size="11">`,
    `<text x="0" y="16" font-size="13" font-weight="600">${esc(o.title)}${o.unit ? ` (${esc(o.unit)})` : ''}</text>`,
  ];
  o.groups.forEach((g, gi) => {
    const y0 = top + gi * blockH;
    parts.push(`<text x="${labelW - 8}" y="${y0 + (o.series.length * barH) / 2 + 4}" text-anchor="end">${esc(g.label)}</text>`);
    g.values.forEach((v, si) => {
      const y = y0 + si * barH;
      const color = o.series[si]?.color ?? PALETTE[si % PALETTE.length];
      if (v === null || !Number.isFinite(v)) {
        parts.push(`<text x="${labelW + 4}" y="${y + barH - 3}" fill="#888">–</text>`);
        return;
      }
      const w = Math.max(1, v * scale);
      parts.push(`<rect x="${labelW}" y="${y}" width="${w.toFixed(1)}" height="${barH - 2}" fill="${color}"><title>${esc(o.series[si]?.name ?? '')}: ${v}</title></rect>`);
      parts.push(`<text x="${(labelW + w + 4).toFixed(1)}" y="${y + barH - 3}">${v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })}</text>`);
    });
  });
  let lx = labelW;
  const ly = top + o.groups.length * blockH + 12;
  o.series.forEach((s, si) => {
    const color = s.color ?? PALETTE[si % PALETTE.length];
    parts.push(`<rect x="${lx}" y="${ly - 9}" width="10" height="10" fill="${color}"/><text x="${lx + 14}" y="${ly}">${esc(s.name)}</text>`);
    lx += 24 + s.name.length * 6.5;
  });
  parts.push('</svg>');
  return parts.join('');
}
