// The README documents every refusal; this pins its table to the catalogue
// so the documentation cannot drift (fastify does this with its error codes).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { packageRoot } from '../../src/config/paths.js';
import { CATALOGUE } from '../../src/errors/catalogue.js';

const readme = readFileSync(join(packageRoot, 'README.md'), 'utf8');
const section = readme.slice(readme.indexOf('## Errors'));
const rows = [...section.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \| `([a-z_]+)` \|/gm)].map((m) => ({ code: m[1], status: Number(m[2]), type: m[3] }));

t.test('every catalogue code is documented with its status and class', async (t) => {
  for (const [code, entry] of Object.entries(CATALOGUE)) {
    const row = rows.find((r) => r.code === code);
    t.ok(row, `README documents ${code}`);
    if (row) t.same({ status: row.status, type: row.type }, { status: entry.status, type: entry.type }, code);
  }
});

t.test('the README documents no code the catalogue lacks', async (t) => {
  for (const row of rows) t.ok(row.code in CATALOGUE, `${row.code} is in the catalogue`);
});
