// Organization routes under /console/v1: the operator lists (search, paging),
// creates, edits quotas and credits; the operator and the organization's own
// signed-in people read it (money as the running actor sees it, including
// what open reservations hold) and its usage (filters, paging, spend per
// day). Money crosses as decimal strings; errors use the REST envelope.
import { randomUUID } from 'node:crypto';
import { formatMoney } from '../money/money.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { LedgerClient } from '../ledger/protocol.js';
import type { Logger } from '../log/logger.js';
import { parseCreditInput, parseOrganizationEdit, parseOrganizationInput } from '../organizations/input.js';
import { createOrganization, readOrganization, updateOrganization, type OrganizationRow } from '../organizations/store.js';
import { organizationMoneyView } from '../organizations/view.js';
import { isUuid } from '../store/uuid.js';
import type { RequestContext, Route } from '../server/context.js';
import type { Pool } from '../store/pool.js';
import { consoleRouteKit, ownOrg, REPLAYED, type ConsoleAuth, type Principal } from './admin.js';
import { decodeCursor, encodeCursor, isCursor, isDay, isDays, isLimit, isText, isUuidText, limitOf, readQuery, REQUEST_ID, UUID_ID } from './query.js';
import { modelFilter, organizationsPage, usageDaily, usagePage, type UsageFilter, type UsageListRow } from './usage-store.js';

export interface OrgConsoleDeps {
  pool: Pool;
  ledger: LedgerClient;
  auth: ConsoleAuth;
  logger: Logger;
}
const MAX_IDEMPOTENCY_KEY = 200;

function usageView(r: UsageListRow): Record<string, unknown> {
  return {
    request_id: r.request_id,
    key_id: r.key_id,
    model_id: r.model_id,
    supplier: r.supplier,
    surface: r.surface,
    funding: r.funding,
    input_tokens: Number(r.input_tokens),
    cached_input_tokens: Number(r.cached_input_tokens),
    output_tokens: Number(r.output_tokens),
    image_units: Number(r.image_units),
    reserved: formatMoney(Number(r.reserved_micros)),
    charged: formatMoney(Number(r.charged_micros)),
    overdraft: formatMoney(Number(r.overdraft_micros)),
    outcome: r.outcome,
    metered_source: r.metered_source,
    hold_expired: r.hold_expired,
    ttfb_ms: r.ttfb_ms,
    total_ms: r.total_ms,
    finished_at: r.finished_at.toISOString(),
  };
}

/** The ledger not answering is the service being unavailable, not an internal error; its cause goes to the log (a message, never a body). */
function viaLedger<T>(p: Promise<T>, ctx: RequestContext, logger: Logger): Promise<T> {
  return p.catch((err: unknown) => {
    if (err instanceof GatewayError) throw err;
    logger.warn({ rid: ctx.requestId, err: (err as Error)?.message }, 'console: the ledger did not answer');
    throw new GatewayError('service_unavailable');
  });
}

export function orgConsoleRoutes(deps: OrgConsoleDeps): Route[] {
  const { route, answer } = consoleRouteKit(deps.auth);

  const organization = async (ctx: RequestContext, who: Principal): Promise<OrganizationRow> => {
    const orgId = ctx.params[0];
    ownOrg(who, orgId);
    const row = isUuid(orgId) ? await readOrganization(deps.pool, orgId) : null;
    if (row === null) throw new GatewayError('organization_not_found');
    ctx.orgId = row.id;
    return row;
  };
  const view = async (ctx: RequestContext, row: OrganizationRow): Promise<Record<string, unknown>> => {
    const account = await viaLedger(deps.ledger.account(row.id), ctx, deps.logger);
    if (account === null) throw new GatewayError('organization_not_found');
    return organizationMoneyView(row, account);
  };

  return [
    route('get', '/console/v1/organizations', false, async (ctx) => {
      const q = readQuery(ctx.query, { limit: isLimit, cursor: isCursor, q: isText(200) });
      const limit = limitOf(q);
      const page = await organizationsPage(deps.pool, q.get('q') ?? null, limit, decodeCursor(q, UUID_ID));
      // Money and holds as the running actors see them, for this page only.
      const data = await Promise.all(page.rows.map(async (r) => view(ctx, r as unknown as OrganizationRow).catch(() => ({ object: 'organization', id: r.id, name: r.name, created_at: r.created_at.toISOString() }))));
      const last = page.rows[page.rows.length - 1];
      answer(ctx, 200, { object: 'list', data, has_more: page.hasMore, next_cursor: page.hasMore && last ? encodeCursor(last.cursor_at, last.id) : null });
    }, { operatorOnly: true }),
    route('post', '/console/v1/organizations', true, async (ctx) => {
      // The same validation as `tollgate orgs create`; the opening balance goes through the journal.
      const input = parseOrganizationInput(ctx.body);
      const row = await createOrganization(deps.pool, randomUUID(), input.name, input.balanceMicros);
      ctx.orgId = row.id;
      answer(ctx, 201, await view(ctx, row));
    }, { operatorOnly: true }),
    route('get', '/console/v1/organizations/:org_id', false, async (ctx, who) => {
      answer(ctx, 200, await view(ctx, await organization(ctx, who)));
    }),
    route('patch', '/console/v1/organizations/:org_id', true, async (ctx, who) => {
      const input = parseOrganizationEdit(ctx.body);
      await organization(ctx, who);
      const row = await updateOrganization(deps.pool, ctx.params[0], input);
      if (row === null) throw new GatewayError('organization_not_found');
      // New quotas apply to the running actor before this answer goes out.
      await viaLedger(deps.ledger.refresh(row.id), ctx, deps.logger);
      answer(ctx, 200, await view(ctx, row));
    }, { operatorOnly: true }),
    route('post', '/console/v1/organizations/:org_id/credits', true, async (ctx, who) => {
      const row = await organization(ctx, who);
      const input = parseCreditInput(ctx.body);
      const key = ctx.idempotencyKey === '' ? null : ctx.idempotencyKey;
      if (key !== null && key.length > MAX_IDEMPOTENCY_KEY) {
        throw new GatewayError('invalid_request', { param: 'Idempotency-Key', fieldDetails: [{ field: 'Idempotency-Key', issue: `at most ${MAX_IDEMPOTENCY_KEY} characters` }] });
      }
      // Through the actor: a running organization can spend the credit as soon as this answers.
      const reply = await viaLedger(deps.ledger.credit({ orgId: row.id, key, amount: input.amount, target: input.target, expiresAt: input.expiresAt, note: input.note }), ctx, deps.logger);
      if (!reply.ok) throw new GatewayError(reply.code === 'money_limit' ? 'money_limit_exceeded' : 'organization_not_found');
      if (reply.replayed && (reply.amount !== input.amount || reply.target !== input.target)) throw new GatewayError('idempotency_conflict');
      const body = {
        object: 'credit',
        id: reply.entryId,
        amount: formatMoney(input.amount),
        target: input.target,
        expires_at: input.expiresAt,
        note: input.note,
        organization: organizationMoneyView(row, reply.account),
      };
      if (reply.replayed) answer(ctx, 200, body, REPLAYED);
      else answer(ctx, 201, body);
    }, { operatorOnly: true }),
    route('get', '/console/v1/organizations/:org_id/usage', false, async (ctx, who) => {
      const q = readQuery(ctx.query, { limit: isLimit, cursor: isCursor, key_id: isUuidText, model: isText(200), day: isDay });
      const row = await organization(ctx, who);
      // Settlements still queued for the store are written first, so the list is complete up to now.
      await viaLedger(deps.ledger.sync(), ctx, deps.logger);
      const limit = limitOf(q);
      const page = await usagePage(deps.pool, await usageFilter(deps.pool, row.id, q), limit, decodeCursor(q, REQUEST_ID));
      const last = page.rows[page.rows.length - 1];
      answer(ctx, 200, {
        object: 'list',
        data: page.rows.map(usageView),
        has_more: page.hasMore,
        next_cursor: page.hasMore && last ? encodeCursor(last.cursor_at, last.request_id) : null,
        total_requests: page.requests,
        total_charged: formatMoney(page.chargedMicros),
      });
    }),
    route('get', '/console/v1/organizations/:org_id/usage/daily', false, async (ctx, who) => {
      const q = readQuery(ctx.query, { days: isDays, key_id: isUuidText, model: isText(200) });
      const row = await organization(ctx, who);
      await viaLedger(deps.ledger.sync(), ctx, deps.logger);
      const days = await usageDaily(deps.pool, await usageFilter(deps.pool, row.id, q), q.has('days') ? Number(q.get('days')) : 30);
      // The total is summed here in exact micros so that the front end never adds decimals as floats.
      const total = days.reduce((sum, d) => sum + d.chargedMicros, 0n);
      answer(ctx, 200, { object: 'list', total_charged: formatMoney(total), data: days.map((d) => ({ day: d.day, requests: d.requests, charged: formatMoney(d.chargedMicros) })) });
    }),
  ];
}

async function usageFilter(pool: Pool, orgId: string, q: Map<string, string>): Promise<UsageFilter> {
  const model = q.get('model');
  return { orgId, keyId: q.get('key_id') ?? null, model: model === undefined ? null : await modelFilter(pool, model), day: q.get('day') ?? null };
}
