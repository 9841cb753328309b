// `tollgate orgs create|show`: the same validation and SQL as the console API.
import { randomUUID } from 'node:crypto';
import { isUuid } from '../../store/uuid.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { parseOrganizationInput } from '../../organizations/input.js';
import { createOrganization, readOrganization } from '../../organizations/store.js';
import { organizationView } from '../../organizations/view.js';
import { printJson, UsageError, type CliContext, type Command } from './command.js';

const JSON_OPTION = { json: { type: 'boolean', help: 'print the organization as JSON' } } as const;

function showOrganization(ctx: CliContext, view: Record<string, unknown>, json: boolean): void {
  if (json) return printJson(ctx, view);
  const quotas = view.quotas as Record<string, unknown> | undefined;
  ctx.out(
    `Organization ${String(view.id)}\n` +
      `  name:     ${String(view.name)}\n` +
      `  balance:  ${String(view.balance)}\n` +
      (view.held !== undefined ? `  held:     ${String(view.held)} in ${String(view.open_holds)} open reservations (available ${String(view.available)})\n` : '') +
      `  package:  ${String(view.package)}${view.package_expires_at ? ` (expires ${String(view.package_expires_at)})` : ''}\n` +
      (quotas !== undefined ? `  quotas:   ${String(quotas.per_second)}/s (${String(quotas.per_second_source)}), ${String(quotas.per_minute)}/min (${String(quotas.per_minute_source)})\n` : '') +
      `  created:  ${String(view.created_at)}\n`,
  );
}

/**
 * The organization as the running gateway's ledger sees it (the amount held
 * and the open reservations live in its memory, not in the store), through
 * its console API with the operator's token.
 */
async function liveOrganization(url: string, orgId: string): Promise<Record<string, unknown>> {
  const token = process.env.ADMIN_TOKEN;
  if (token === undefined || token === '') throw new UsageError('--url needs ADMIN_TOKEN in the environment (the console API is the operator\'s)');
  let res: Response;
  try {
    res = await fetch(`${url.replace(/\/+$/, '')}/console/v1/organizations/${encodeURIComponent(orgId)}`, { headers: { authorization: `Bearer ${token}` } });
  } catch (err) {
    throw new UsageError(`cannot reach the gateway at ${url}: ${(err as Error).message}`);
  }
  if (res.status === 404) throw new GatewayError('organization_not_found');
  if (!res.ok) throw new UsageError(`the gateway at ${url} answered ${res.status}`);
  return (await res.json()) as Record<string, unknown>;
}

export const orgCommands: Command[] = [
  {
    path: ['orgs', 'create'],
    args: '',
    summary: 'create an organization',
    options: {
      name: { type: 'string', help: 'the organization\'s name (required)' },
      balance: { type: 'string', help: 'starting balance as a decimal, e.g. 25.00 (default 0)' },
      ...JSON_OPTION,
    },
    async run(_positionals, values, ctx) {
      if (typeof values.name !== 'string') throw new UsageError('--name is required');
      const body: Record<string, unknown> = { name: values.name };
      if (values.balance !== undefined) body.balance = values.balance;
      const input = parseOrganizationInput(body);
      const { pool } = await ctx.store();
      showOrganization(ctx, organizationView(await createOrganization(pool, randomUUID(), input.name, input.balanceMicros)), values.json === true);
    },
  },
  {
    path: ['orgs', 'show'],
    args: '<org_id>',
    summary: 'show an organization and its money (with --url: the amount held and the quotas, from the running gateway)',
    options: {
      url: { type: 'string', help: 'a running gateway (e.g. http://127.0.0.1:8080; ADMIN_TOKEN from the environment): adds the amount held, open reservations and quotas from its ledger (default $TOLLGATE_URL)' },
      ...JSON_OPTION,
    },
    async run(positionals, values, ctx) {
      const [orgId] = positionals;
      if (orgId === undefined) throw new UsageError('name the organization: tollgate orgs show <org_id>');
      const url = typeof values.url === 'string' ? values.url : process.env.TOLLGATE_URL;
      if (url !== undefined && url !== '') return showOrganization(ctx, await liveOrganization(url, orgId), values.json === true);
      const { pool } = await ctx.store();
      const row = isUuid(orgId) ? await readOrganization(pool, orgId) : null;
      if (row === null) throw new GatewayError('organization_not_found');
      showOrganization(ctx, organizationView(row), values.json === true);
    },
  },
];
