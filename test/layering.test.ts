// Imports run one way (shared/DESIGN.md, Layering): this reads the import
// lines of src/** and workers/** (type-only imports included: they couple the
// code just the same) and fails when a folder imports one in a layer above
// it. Folders in one layer may import each other. A new top-level folder
// under src/ must be placed in LAYERS before this passes.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import t from 'tap';
import { packageRoot } from '../src/config/paths.js';

/** Top to bottom. `main` is src/main.ts; `workers` is the top-level workers/ folder (piscina tasks). */
const LAYERS: string[][] = [
  ['main', 'cluster'], // processes: the primary and the workers wire everything below
  ['console', 'web', 'simulator'], // edges beside the model API: operator's API and CLI, web pages, the demo supplier
  ['pipeline', 'offload'], // the stages of a model call, and the pool some of them use
  ['workers'], // pool tasks: pure functions over surfaces, never the pipeline
  ['surfaces'],
  ['auth', 'catalog', 'billing', 'suppliers', 'organizations'],
  ['server'], // the HTTP toolkit (uWebSockets app, bodies, SSE, request context) that the layers above build on
  ['ledger'],
  ['store', 'bus', 'ipc'], // PostgreSQL, change notifications over it, the cluster's message channel
];
/** Usable from anywhere; they import nothing of ours but each other. */
const SHARED = ['errors', 'config', 'log', 'metrics', 'money'];

const rank = new Map<string, number>();
LAYERS.forEach((folders, i) => folders.forEach((f) => rank.set(f, i)));

const IMPORT = /(?:^|[\n;])\s*(?:import|export)\b[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]|(?:^|[\n;])\s*import\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The unit a file belongs to: its top-level folder under src/, `main` for src/main.ts, `workers` for workers/. */
function unitOf(file: string): string | null {
  const rel = relative(packageRoot, file).split(/[\\/]/);
  if (rel[0] === 'workers') return 'workers';
  if (rel[0] !== 'src') return null;
  return rel.length === 2 ? rel[1].replace(/\.ts$/, '') : rel[1];
}

/** Relative specifiers of a file's imports and re-exports (packages and node: builtins are not ours). */
function importsOf(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[1] ?? m[2] ?? m[3];
    if (spec.startsWith('.')) out.push(spec);
  }
  return out;
}

interface Edge {
  file: string;
  from: string;
  to: string;
}

function edges(): { edges: Edge[]; unplaced: string[] } {
  const found: Edge[] = [];
  const unplaced = new Set<string>();
  for (const file of [...sources(join(packageRoot, 'src')), ...sources(join(packageRoot, 'workers'))]) {
    const from = unitOf(file)!;
    for (const spec of importsOf(readFileSync(file, 'utf8'))) {
      const to = unitOf(resolve(dirname(file), spec));
      if (to === null || to === from) continue;
      for (const u of [from, to]) if (!rank.has(u) && !SHARED.includes(u)) unplaced.add(u);
      found.push({ file: relative(packageRoot, file), from, to });
    }
  }
  return { edges: found, unplaced: [...unplaced] };
}

/** Why an edge breaks the rule, or null when it keeps it. */
function breach(e: Edge): string | null {
  if (SHARED.includes(e.from)) return SHARED.includes(e.to) ? null : `${e.from} is shared: it may import only ${SHARED.join(', ')}`;
  if (SHARED.includes(e.to)) return null;
  const from = rank.get(e.from);
  const to = rank.get(e.to);
  if (from === undefined || to === undefined) return null; // reported as unplaced
  return to < from ? `${e.from} (layer ${from}) imports ${e.to} (layer ${to}, above it)` : null;
}

t.test('the import parser sees every form we write', async (t) => {
  const text = [
    "import { a } from '../auth/types.js';",
    "import type { B } from '../billing/types.js';",
    'import {',
    '  c,',
    '  d,',
    "} from '../catalog/holder.js';",
    "export { e } from './e.js';",
    "export type { F } from '../ledger/protocol.js';",
    "import '../log/side-effect.js';",
    "const g = await import('../store/pool.js');",
    "import { request } from 'undici';",
    "import { readFileSync } from 'node:fs';",
    "const s = 'this is not an import from \\'../server/x.js\\'';",
  ].join('\n');
  t.same(importsOf(text), ['../auth/types.js', '../billing/types.js', '../catalog/holder.js', './e.js', '../ledger/protocol.js', '../log/side-effect.js', '../store/pool.js']);
});

t.test('the rule can fail: a lower layer importing a higher one, and shared code importing a layer', async (t) => {
  t.match(breach({ file: 'x', from: 'ledger', to: 'billing' }), /ledger .* imports billing .*above it/);
  t.match(breach({ file: 'x', from: 'workers', to: 'pipeline' }), /above it/);
  t.match(breach({ file: 'x', from: 'money', to: 'ledger' }), /money is shared/);
  t.equal(breach({ file: 'x', from: 'billing', to: 'ledger' }), null, 'downwards is fine');
  t.equal(breach({ file: 'x', from: 'billing', to: 'auth' }), null, 'within a layer is fine');
  t.equal(breach({ file: 'x', from: 'store', to: 'errors' }), null, 'shared code from anywhere');
});

t.test('src/** and workers/** import only downwards (DESIGN.md, Layering)', async (t) => {
  const { edges: all, unplaced } = edges();
  t.ok(all.length > 100, `read the imports (${all.length} between folders)`);
  t.same(unplaced, [], 'every top-level folder under src/ has a place in LAYERS or SHARED');
  const breaches = all.flatMap((e) => {
    const why = breach(e);
    return why === null ? [] : [`${e.file}: ${why}`];
  });
  t.same(breaches, [], 'no import runs upwards');
});
