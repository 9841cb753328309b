// The halftone banner is a pure function of banner_seed: the page is rendered
// once per catalog revision and cached by its ETag, so the same seed must draw
// the same bytes, and the seeds of the catalog must draw visibly different
// pictures.
import t from 'tap';
import { bannerSvg } from '../../src/web/banner.js';

function dots(svg: string): string[] {
  return [...svg.matchAll(/<circle [^>]+\/>/g)].map((m) => m[0]);
}

t.test('the same seed draws byte-identical SVG', async (t) => {
  for (const seed of [0, 1, 1101, 2202, 2 ** 31 - 1, -7]) t.equal(bannerSvg(seed), bannerSvg(seed), `seed ${seed}`);
});

t.test('different seeds draw different pictures, not just different colours', async (t) => {
  const seeds = [1101, 2202, 3303, 4404, 5505, 1102];
  const svgs = seeds.map(bannerSvg);
  t.equal(new Set(svgs).size, seeds.length, 'every seed draws its own SVG');
  for (let i = 0; i < seeds.length; i++) {
    for (let j = i + 1; j < seeds.length; j++) {
      const a = new Set(dots(svgs[i]));
      const shared = dots(svgs[j]).filter((d) => a.has(d)).length;
      // Visibly different: most dots differ in place or size between any two seeds.
      t.ok(shared < 0.5 * Math.min(a.size, dots(svgs[j]).length), `seeds ${seeds[i]} and ${seeds[j]} share ${shared} dots`);
    }
  }
});

t.test('a banner is a well-formed, decorative SVG with no script', async (t) => {
  const svg = bannerSvg(42);
  t.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"[^>]*aria-hidden="true"/);
  t.ok(svg.endsWith('</svg>'));
  t.notMatch(svg, /script|style=|on[a-z]+=/i, 'no script, no inline style (the CSP forbids both)');
  t.ok(dots(svg).length > 50, 'a halftone has many dots');
});
