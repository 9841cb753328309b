// `tollgate credit <org_id> --amount 10.00 [--target balance|package]
// [--expires-at ISO] [--note TEXT] [--idempotency-key KEY]`: the console
// API's credit, with the same validation (organizations/input.ts) and the
// same journal entries and statement as the ledger actor's credit
// (ledger/store-credit.ts). This process cannot reach a running
// gateway's actors, so it writes to the store and the gateway's ledger takes
// the credit in at its next reconcile, within a second.
import { formatMoney } from '../../money/money.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { creditInStore } from '../../ledger/store-credit.js';
import { parseCreditInput } from '../../organizations/input.js';
import { readOrganization } from '../../organizations/store.js';
import { organizationView } from '../../organizations/view.js';
import { isUuid } from '../../store/uuid.js';
import { printJson, UsageError, type Command } from './command.js';

export const creditCommands: Command[] = [
  {
    path: ['credit'],
    args: '<org_id>',
    summary: "add money to an organization's balance or package",
    options: {
      amount: { type: 'string', help: 'the amount as a decimal, e.g. 10.00 (required)' },
      target: { type: 'string', help: 'balance (default) or package' },
      'expires-at': { type: 'string', help: 'package credits: when the package expires (ISO 8601)' },
      note: { type: 'string', help: 'a note kept with the journal entry' },
      'idempotency-key': { type: 'string', help: 'repeating the command with the same key credits once' },
      json: { type: 'boolean', help: 'print the result as JSON' },
    },
    async run(positionals, values, ctx) {
      const [orgId] = positionals;
      if (orgId === undefined) throw new UsageError('name the organization: tollgate credit <org_id> --amount 10.00');
      if (typeof values.amount !== 'string') throw new UsageError('--amount is required');
      const body: Record<string, unknown> = { amount: values.amount };
      if (values.target !== undefined) body.target = values.target;
      if (values['expires-at'] !== undefined) body.expires_at = values['expires-at'];
      if (values.note !== undefined) body.note = values.note;
      const input = parseCreditInput(body);
      if (!isUuid(orgId)) throw new GatewayError('organization_not_found');
      const key = typeof values['idempotency-key'] === 'string' ? values['idempotency-key'] : null;
      const { pool } = await ctx.store();
      const result = await creditInStore(pool, { orgId, key, amount: input.amount, target: input.target, expiresAt: input.expiresAt, note: input.note });
      if (!result.ok) throw new GatewayError(result.code === 'money_limit' ? 'money_limit_exceeded' : 'organization_not_found');
      if (result.replayed && (result.amount !== input.amount || result.target !== input.target)) throw new GatewayError('idempotency_conflict');
      const org = organizationView((await readOrganization(pool, orgId))!);
      if (values.json === true) {
        printJson(ctx, { object: 'credit', id: result.entryId, amount: formatMoney(input.amount), target: input.target, expires_at: input.expiresAt, note: input.note, replayed: result.replayed, organization: org });
        return;
      }
      const what = `${formatMoney(input.amount)} to the ${input.target} of ${orgId}`;
      ctx.out(
        (result.replayed ? `Already credited (same idempotency key): ${what}\n` : `Credited ${what}\n`) +
          `  balance:  ${String(org.balance)}\n` +
          `  package:  ${String(org.package)}${org.package_expires_at ? ` (expires ${String(org.package_expires_at)})` : ''}\n` +
          `  entry:    ${result.entryId}\n`,
      );
    },
  },
];
