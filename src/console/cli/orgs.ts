// `tollgate orgs create|show`: the same validation and SQL as the console API.
import { randomUUID } from 'node:crypto';
import { isUuid } from '../../store/uuid.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { createOrganization, readOrganization } from '../../ledger/accounts.js';
import { organizationView, parseOrganizationInput } from '../org-store.js';
import { printJson, UsageError, type CliContext, type Command } from './command.js';

const JSON_OPTION = { json: { type: 'boolean', help: 'print the organization as JSON' } } as const;

function showOrganization(ctx: CliContext, view: Record<string, unknown>, json: boolean): void {
  if (json) return printJson(ctx, view);
  ctx.out(
    `Organization ${String(view.id)}\n` +
      `  name:     ${String(view.name)}\n` +
      `  balance:  ${String(view.balance)}\n` +
      `  package:  ${String(view.package)}${view.package_expires_at ? ` (expires ${String(view.package_expires_at)})` : ''}\n` +
      `  created:  ${String(view.created_at)}\n`,
  );
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
    summary: 'show an organization and its money',
    options: { ...JSON_OPTION },
    async run(positionals, values, ctx) {
      const [orgId] = positionals;
      if (orgId === undefined) throw new UsageError('name the organization: tollgate orgs show <org_id>');
      const { pool } = await ctx.store();
      const row = isUuid(orgId) ? await readOrganization(pool, orgId) : null;
      if (row === null) throw new GatewayError('organization_not_found');
      showOrganization(ctx, organizationView(row), values.json === true);
    },
  },
];
