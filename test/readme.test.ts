// Every setting of config/schema.json is in the README's settings table, with
// its default and, where one exists, its environment variable.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { ENV_SETTINGS } from '../src/config/load.js';
import { packageRoot } from '../src/config/paths.js';

const readme = readFileSync(join(packageRoot, 'README.md'), 'utf8');
const schema = JSON.parse(readFileSync(join(packageRoot, 'config/schema.json'), 'utf8'));
const defaults = JSON.parse(readFileSync(join(packageRoot, 'config/default.json'), 'utf8'));

function leaves(sch: any, def: any, prefix = ''): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = [];
  for (const [k, v] of Object.entries<any>(sch.properties)) {
    const path = prefix ? `${prefix}.${k}` : k;
    if (v.type === 'object' && v.properties) out.push(...leaves(v, def[k], path));
    else out.push([path, def[k]]);
  }
  return out;
}

const rows = new Map([...readme.matchAll(/^\| `([a-z_.]+)` \|\s*(`[A-Z_]+`)?\s*\| `([^`]*)` \|/gm)].map((m) => [m[1], { env: m[2]?.slice(1, -1) ?? null, def: m[3] }]));
const envOf = new Map(ENV_SETTINGS.map(([env, path]) => [path, env]));

for (const [path, def] of leaves(schema, defaults)) {
  t.test(path, async (t) => {
    const row = rows.get(path);
    t.ok(row, 'documented');
    if (!row) return;
    const expected = typeof def === 'string' ? def : JSON.stringify(def);
    t.equal(row.def, expected, 'default as documented');
    t.equal(row.env, envOf.get(path) ?? null, 'environment variable as documented');
  });
}
