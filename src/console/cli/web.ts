// `tollgate orgs list`, `tollgate usage` and `tollgate accounts
// create|list|disable`: the console's lists and organization accounts from a
// shell, through the same queries and validation as the console API
// (console/query.ts, usage-store.ts, accounts.ts).
import { formatMoney } from '../../money/money.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { organizationExists } from '../../auth/key-store.js';
import { isUuid } from '../../store/uuid.js';
import { accountView, createAccount, disableAccount, listAccounts, parseAccountInput } from '../accounts.js';
import { decodeCursor, encodeCursor, isCursor, isDay, isLimit, isText, isUuidText, limitOf, REQUEST_ID, UUID_ID } from '../query.js';
import { modelFilter, organizationsPage, usagePage } from '../usage-store.js';
import { printJson, table, UsageError, type Command, type OptionValues } from './command.js';

/** Flags checked with the console's query validators, so both refuse the same values. */
function flags(values: OptionValues, spec: Record<string, (v: string) => string | null>): Map<string, string> {
  const out = new Map<string, string>();
  for (const [name, check] of Object.entries(spec)) {
    const v = values[name.replace('_', '-')];
    if (typeof v !== 'string') continue;
    const issue = check(v);
    if (issue !== null) throw new UsageError(`--${name.replace('_', '-')} ${issue}`);
    out.set(name, v);
  }
  return out;
}

const JSON_OPTION = { json: { type: 'boolean', help: 'print JSON' } } as const;
const PAGE_OPTIONS = {
  limit: { type: 'string', help: 'rows per page, 1–200 (default 50)' },
  cursor: { type: 'string', help: 'the next_cursor a previous page printed' },
} as const;

export const webCommands: Command[] = [
  {
    path: ['orgs', 'list'],
    args: '',
    summary: 'list organizations (oldest first), optionally those whose name contains --search',
    options: { search: { type: 'string', help: 'name contains (case-insensitive)' }, ...PAGE_OPTIONS, ...JSON_OPTION },
    async run(_p, values, ctx) {
      const q = flags(values, { search: isText(200), limit: isLimit, cursor: isCursor });
      const { pool } = await ctx.store();
      const page = await organizationsPage(pool, q.get('search') ?? null, limitOf(q), decodeCursor(q, UUID_ID));
      const last = page.rows[page.rows.length - 1];
      const next = page.hasMore && last ? encodeCursor(last.cursor_at, last.id) : null;
      const data = page.rows.map((r) => ({
        id: r.id,
        name: r.name,
        balance: formatMoney(r.balance_micros),
        package: formatMoney(r.package_micros),
        created_at: r.created_at.toISOString(),
      }));
      const currency = ctx.config().billing.currency;
      if (values.json === true) return printJson(ctx, { object: 'list', currency, data, has_more: page.hasMore, next_cursor: next });
      ctx.out(
        table(['ID', 'NAME', `BALANCE (${currency})`, `PACKAGE (${currency})`, 'CREATED'], data.map((d) => [d.id, d.name, d.balance, d.package, d.created_at])) +
          (next ? `next page: --cursor ${next}\n` : ''),
      );
    },
  },
  {
    path: ['usage'],
    args: '<org_id>',
    summary: "an organization's usage rows (newest first) and totals, with the console's filters",
    options: {
      'key-id': { type: 'string', help: 'only this key' },
      model: { type: 'string', help: 'only this model: its name, an alias or its model_id' },
      day: { type: 'string', help: 'only this UTC day, YYYY-MM-DD' },
      ...PAGE_OPTIONS,
      ...JSON_OPTION,
    },
    async run([orgId], values, ctx) {
      if (orgId === undefined) throw new UsageError('name the organization: tollgate usage <org_id>');
      const q = flags(values, { key_id: isUuidText, model: isText(200), day: isDay, limit: isLimit, cursor: isCursor });
      const { pool } = await ctx.store();
      if (!isUuid(orgId) || !(await organizationExists(pool, orgId))) throw new GatewayError('organization_not_found');
      const model = q.get('model');
      const filter = { orgId, keyId: q.get('key_id') ?? null, model: model === undefined ? null : await modelFilter(pool, model), day: q.get('day') ?? null };
      const page = await usagePage(pool, filter, limitOf(q), decodeCursor(q, REQUEST_ID));
      // Rows record the model_id; a person reads the model's name.
      const names = new Map((await pool.query<{ id: string; name: string }>('SELECT model_id::text AS id, canonical_name AS name FROM models')).rows.map((r) => [r.id, r.name]));
      const last = page.rows[page.rows.length - 1];
      const next = page.hasMore && last ? encodeCursor(last.cursor_at, last.request_id) : null;
      const rows = page.rows.map((r) => ({
        request_id: r.request_id,
        finished_at: r.finished_at.toISOString(),
        key_id: r.key_id,
        model_id: r.model_id,
        model: names.get(r.model_id) ?? r.model_id,
        input_tokens: Number(r.input_tokens),
        output_tokens: Number(r.output_tokens),
        charged: formatMoney(Number(r.charged_micros)),
        outcome: r.outcome,
      }));
      const totals = { total_requests: page.requests, total_charged: formatMoney(page.chargedMicros) };
      if (values.json === true) return printJson(ctx, { object: 'list', data: rows, has_more: page.hasMore, next_cursor: next, ...totals });
      ctx.out(
        table(['FINISHED', 'KEY', 'MODEL', 'IN', 'OUT', 'CHARGED', 'OUTCOME'], rows.map((r) => [r.finished_at, r.key_id, r.model, String(r.input_tokens), String(r.output_tokens), r.charged, r.outcome])) +
          `total: ${totals.total_requests} requests, ${totals.total_charged} charged\n` +
          (next ? `next page: --cursor ${next}\n` : ''),
      );
    },
  },
  {
    path: ['accounts', 'create'],
    args: '<org_id>',
    summary: 'create a console account for a person of the organization (password read from TOLLGATE_PASSWORD)',
    options: { email: { type: 'string', help: 'sign-in email (required)' }, name: { type: 'string', help: "the person's name (required)" }, ...JSON_OPTION },
    async run([orgId], values, ctx) {
      if (orgId === undefined) throw new UsageError('name the organization: tollgate accounts create <org_id> --email … --name …');
      // Never a flag: command lines end up in shell history and process lists.
      const password = process.env.TOLLGATE_PASSWORD;
      if (password === undefined) throw new UsageError('set TOLLGATE_PASSWORD to the new account\'s password');
      const input = parseAccountInput({ email: values.email, name: values.name, password });
      const { pool } = await ctx.store();
      if (!isUuid(orgId) || !(await organizationExists(pool, orgId))) throw new GatewayError('organization_not_found');
      const view = accountView(await createAccount(pool, orgId, input));
      if (values.json === true) return printJson(ctx, view);
      ctx.out(`Account ${String(view.id)} (${input.email}) created in ${orgId}\n`);
    },
  },
  {
    path: ['accounts', 'list'],
    args: '<org_id>',
    summary: "an organization's console accounts",
    options: { ...JSON_OPTION },
    async run([orgId], values, ctx) {
      if (orgId === undefined) throw new UsageError('name the organization: tollgate accounts list <org_id>');
      const { pool } = await ctx.store();
      if (!isUuid(orgId) || !(await organizationExists(pool, orgId))) throw new GatewayError('organization_not_found');
      const data = (await listAccounts(pool, orgId)).map(accountView);
      if (values.json === true) return printJson(ctx, { object: 'list', data });
      ctx.out(table(['ID', 'EMAIL', 'NAME', 'STATUS'], data.map((a) => [String(a.id), String(a.email), String(a.name), String(a.status)])));
    },
  },
  {
    path: ['accounts', 'disable'],
    args: '<account_id>',
    summary: 'disable a console account and end its sessions',
    options: { ...JSON_OPTION },
    async run([id], values, ctx) {
      if (id === undefined) throw new UsageError('name the account: tollgate accounts disable <account_id>');
      const { pool } = await ctx.store();
      const row = isUuid(id) ? await disableAccount(pool, id) : null;
      if (row === null) throw new GatewayError('account_not_found');
      if (values.json === true) return printJson(ctx, accountView(row));
      ctx.out(`Account ${row.id} disabled; its sessions ended\n`);
    },
  },
];
