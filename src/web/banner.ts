// A model's halftone banner, drawn from its catalog banner_seed: a pure
// function of the seed (same seed → byte-identical SVG, tested), so the page
// can be rendered once per catalog revision and cached by its ETag. Dots on a
// grid whose radius follows a smooth field (a few soft blobs and one wave),
// in two colours picked from the seed: the look of a halftone print.

const COLS = 36;
const ROWS = 12;
const STEP = 10;
const WIDTH = COLS * STEP;
const HEIGHT = ROWS * STEP;

/** mulberry32: a small, well-mixed 32-bit generator; enough to vary pictures. */
function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function hsl(h: number, s: number, l: number): string {
  return `hsl(${Math.round(h)} ${Math.round(s)}% ${Math.round(l)}%)`;
}

/** The banner of `seed` (any integer; non-integers are truncated) as an SVG element string. */
export function bannerSvg(seed: number): string {
  const rand = generator(Math.trunc(seed) ^ 0x9e3779b9);
  const hue = rand() * 360;
  const ink = hsl(hue, 70, 30);
  const paper = hsl((hue + 150 + rand() * 60) % 360, 60, 92);
  const blobs = Array.from({ length: 3 }, () => ({ x: rand() * COLS, y: rand() * ROWS, r: 3 + rand() * 8, w: 0.5 + rand() * 0.6 }));
  const wave = { fx: 0.15 + rand() * 0.5, fy: 0.2 + rand() * 0.6, phase: rand() * Math.PI * 2, w: 0.15 + rand() * 0.25 };
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${WIDTH} ${HEIGHT}" preserveAspectRatio="xMidYMid slice" aria-hidden="true" focusable="false">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="${paper}"/>`,
    `<g fill="${ink}">`,
  ];
  for (let row = 0; row < ROWS; row++) {
    for (let col = 0; col < COLS; col++) {
      let v = wave.w * (1 + Math.sin(col * wave.fx + row * wave.fy + wave.phase)) * 0.5;
      for (const b of blobs) {
        const d2 = (col - b.x) ** 2 + (row - b.y) ** 2;
        v += b.w * Math.exp(-d2 / (b.r * b.r));
      }
      const r = Math.min(1, v) * STEP * 0.55;
      if (r < 0.4) continue;
      parts.push(`<circle cx="${col * STEP + STEP / 2}" cy="${row * STEP + STEP / 2}" r="${r.toFixed(2)}"/>`);
    }
  }
  parts.push('</g></svg>');
  return parts.join('');
}
