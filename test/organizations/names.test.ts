// One rule for an organization's name (src/organizations/input.ts): creating
// through the console API, editing through it, and `tollgate orgs create`
// accept the same names (trimmed the same way) and refuse the same ones, on a
// real gateway and the real command; a console account's name follows it too. Before the rule was shared, an edit
// accepted a tab or a line break that a create refused.
import t from 'tap';
import { startGateway, type Gateway } from '../helpers/gateway.js';
import { testDatabase } from '../helpers/services.js';
import { ADMIN, call, tollgate } from '../console/keys-helpers.js';

interface Row {
  name: unknown;
  /** The stored name when accepted; null when refused. */
  stored: string | null;
  /** A command line cannot carry it (a NUL, or a value that is not a string). */
  apiOnly?: boolean;
}

const TABLE: Row[] = [
  { name: 'Acme', stored: 'Acme' },
  { name: '  Acme Corp  ', stored: 'Acme Corp' },
  { name: "O'Brien & Co. — Ünïcødé 組織", stored: "O'Brien & Co. — Ünïcødé 組織" },
  { name: 'x'.repeat(200), stored: 'x'.repeat(200) },
  { name: 'x'.repeat(201), stored: null },
  { name: '', stored: null },
  { name: '   ', stored: null },
  { name: 'A\tB', stored: null },
  { name: 'A\nB', stored: null },
  { name: 'A\rB', stored: null },
  { name: 'A\u007fB', stored: null },
  { name: 'A\u0085B', stored: null },
  { name: 'A\u2028B', stored: null },
  { name: 'A\u0000B', stored: null, apiOnly: true },
  { name: 42, stored: null, apiOnly: true },
  { name: null, stored: null, apiOnly: true },
];

let env: Record<string, string>;
let gw: Gateway;

t.before(async () => {
  const url = await testDatabase(t);
  if (url === null) return;
  env = { DATABASE_URL: url, ADMIN_TOKEN: ADMIN.authorization.slice('Bearer '.length) };
  gw = await startGateway({ env });
});
t.teardown(() => gw?.stop());

/** The name as a printable JSON literal: DEL, C1 and U+2028 escaped too (a raw U+2028 would break the TAP stream). */
const label = (name: unknown): string =>
  (JSON.stringify(name) ?? String(name)).slice(0, 40).replace(/[\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

t.test('create, edit and the CLI accept and refuse the same names', async (t) => {
  const target = await call(gw.url, 'POST', '/console/v1/organizations', ADMIN, { name: 'Edit target' });
  t.equal(target.status, 201, target.text);
  for (const row of TABLE) {
    const created = await call(gw.url, 'POST', '/console/v1/organizations', ADMIN, { name: row.name });
    const edited = await call(gw.url, 'PATCH', `/console/v1/organizations/${target.json.id}`, ADMIN, { name: row.name });
    const cli = row.apiOnly ? null : await tollgate(['orgs', 'create', '--name', row.name as string, '--json'], env);
    const person = await call(gw.url, 'POST', `/console/v1/organizations/${target.json.id}/accounts`, ADMIN, { email: `p${TABLE.indexOf(row)}@example.com`, name: row.name, password: 'correct horse battery staple' });
    if (row.stored !== null) {
      t.equal(created.status, 201, `create accepts ${label(row.name)}`);
      t.equal(created.json?.name, row.stored, 'and stores it trimmed');
      t.equal(edited.status, 200, `edit accepts ${label(row.name)}`);
      t.equal(edited.json?.name, row.stored, 'and stores it trimmed');
      t.equal(person.status, 201, `a console account accepts ${label(row.name)}: ${person.text}`);
      t.equal(person.json?.name, row.stored, 'and stores it trimmed');
      if (cli !== null) {
        t.equal(cli.code, 0, `the CLI accepts ${label(row.name)}: ${cli.stderr}`);
        t.equal(cli.code === 0 ? JSON.parse(cli.stdout).name : null, row.stored, 'and stores it trimmed');
      }
    } else {
      t.equal(created.status, 400, `create refuses ${label(row.name)}`);
      t.equal(created.json?.error?.field_details?.[0]?.field, 'name', 'naming the name');
      t.equal(edited.status, 400, `edit refuses ${label(row.name)}`);
      t.same(edited.json?.error?.field_details, created.json?.error?.field_details, 'with the same field_details as create');
      t.equal(person.status, 400, `a console account refuses ${label(row.name)}`);
      t.same(person.json?.error?.field_details, created.json?.error?.field_details, 'with the same field_details');
      if (cli !== null) {
        t.equal(cli.code, 1, `the CLI refuses ${label(row.name)}`);
        t.match(cli.stderr, `name: ${created.json?.error?.field_details?.[0]?.issue}`, 'with the same words');
      }
    }
  }
  const after = await call(gw.url, 'GET', `/console/v1/organizations/${target.json.id}`, ADMIN);
  t.equal(after.json.name, TABLE.filter((r) => r.stored !== null).at(-1)!.stored, 'refused edits left the last accepted name');
});
