// `tollgate catalog apply|show`: how an operator adds suppliers (real
// vendors, OpenAI-compatible servers) and models, and publishes them.
import { readFileSync } from 'node:fs';
import { applyCatalog, checkCredentials, parseCatalogFile } from '../../catalog/apply.js';
import { CredentialPolicy } from '../../catalog/credentials.js';
import { currentRevision } from '../../catalog/load.js';
import { formatMoney } from '../../money/money.js';
import { inTransaction } from '../../store/pool.js';
import { printJson, table, UsageError, type Command } from './command.js';

export const catalogCommands: Command[] = [
  {
    path: ['catalog', 'apply'],
    args: '<file.json>',
    summary: 'add or update vendors, suppliers and models from a catalog file, and publish a revision',
    options: { note: { type: 'string', help: 'why, recorded with the revision' } },
    async run(positionals, values, ctx) {
      const [path] = positionals;
      if (path === undefined) throw new UsageError('name the catalog file: tollgate catalog apply <file.json>');
      const file = parseCatalogFile(readFileSync(path, 'utf8'));
      const credentials = new CredentialPolicy(ctx.config().suppliers.credential_env_allow);
      checkCredentials(file, credentials); // before the store is opened: a refused file touches nothing
      const store = await ctx.store();
      const note = typeof values.note === 'string' ? values.note : `tollgate catalog apply ${path}`;
      const revision = await inTransaction(store.pool, (db) => applyCatalog(db, file, note, credentials));
      await store.publish?.('catalog', String(revision)).catch(() => {});
      ctx.out(
        `Published catalog revision ${revision}: ${file.vendors?.length ?? 0} vendors, ${file.suppliers?.length ?? 0} suppliers, ` +
          `${file.models?.length ?? 0} models. Running gateways load it within catalog.refresh_ms.\n`,
      );
    },
  },
  {
    path: ['catalog', 'show'],
    args: '',
    summary: 'show the published revision, the suppliers and the models with their routes',
    options: { json: { type: 'boolean', help: 'print as JSON' } },
    async run(_positionals, values, ctx) {
      const { pool } = await ctx.store();
      const revision = await currentRevision(pool);
      const suppliers = (await pool.query('SELECT name, wire_protocol, base_url, credential_env, protocols, active FROM suppliers ORDER BY name')).rows;
      const routes = (
        await pool.query(
          `SELECT m.canonical_name AS model, r.protocol_code AS protocol, s.name AS supplier, r.upstream_model, r.priority, (r.active AND s.active AND m.active) AS active
             FROM routes r JOIN models m USING (model_id) JOIN suppliers s ON s.id = r.supplier_id ORDER BY m.canonical_name, r.protocol_code, r.priority`,
        )
      ).rows;
      const models = (
        await pool.query(
          `SELECT m.canonical_name AS model, m.aliases, m.active, p.input_micros_per_mtok AS input, p.cached_input_micros_per_mtok AS cached,
                  p.output_micros_per_mtok AS output, p.image_unit_micros AS image
             FROM models m LEFT JOIN prices p USING (model_id) ORDER BY m.canonical_name`,
        )
      ).rows;
      const currency = ctx.config().billing.currency;
      const price = (micros: string | number | null): string => (micros === null || Number(micros) === 0 ? '-' : formatMoney(BigInt(micros)));
      if (values.json === true) {
        const priced = models.map((m) => ({ ...m, input: price(m.input), cached: price(m.cached), output: price(m.output), image: price(m.image) }));
        return printJson(ctx, { revision, currency, suppliers, models: priced, routes });
      }
      ctx.out(`Catalog revision ${revision}\n\nModels (prices in ${currency}: per 1M tokens, or per image)\n`);
      ctx.out(
        table(
          ['model', 'aliases', 'input', 'cached input', 'output', 'per image', 'active'],
          models.map((m) => [m.model, m.aliases.join(',') || '-', price(m.input), price(m.cached), price(m.output), price(m.image), String(m.active)]),
        ),
      );
      ctx.out('\nSuppliers\n');
      ctx.out(table(['name', 'wire', 'base url', 'credential env', 'protocols', 'active'], suppliers.map((s) => [s.name, s.wire_protocol, s.base_url, s.credential_env ?? '-', s.protocols.join(','), String(s.active)])));
      ctx.out('\nRoutes\n');
      ctx.out(table(['model', 'protocol', 'supplier', 'upstream model', 'priority', 'active'], routes.map((r) => [r.model, r.protocol, r.supplier, r.upstream_model, String(r.priority), String(r.active)])));
    },
  },
];
