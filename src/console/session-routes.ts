// Console sign-in, the current session, sign-out; and the operator's routes
// for an organization's accounts. Sign-in is refused the same way for an
// unknown email and a wrong password (same code, same scrypt work), and is
// rate-limited per account and client address together (web/sign-in-limit.ts):
// each try is counted before its credential is checked. The address is the
// socket's peer, or behind a listed proxy the X-Forwarded-For rule's
// (config/client-address.ts).
import { timingSafeEqual, createHash } from 'node:crypto';
import { clientAddressRule } from '../config/client-address.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { RequestContext, Route } from '../server/context.js';
import { sendJson } from '../server/respond.js';
import type { Pool } from '../store/pool.js';
import { isUuid } from '../store/uuid.js';
import { DUMMY_HASH, MAX_PASSWORD, verifyPassword } from '../web/passwords.js';
import { COOKIE, createSession, findSession, readCookie, revokeSession, sessionCookie } from '../web/sessions.js';
import { beginAttempt, forgive, type SignInLimit } from '../web/sign-in-limit.js';
import { CONSOLE_HEADERS, consoleRouteKit, H_COOKIE, H_PROTO, NO_STORE, ownOrg, parseBody, type ConsoleAuth, type Principal } from './admin.js';
import { accountByEmail, accountView, createAccount, disableAccount, getAccount, listAccounts, parseAccountInput } from './accounts.js';
import { organizationExists } from '../auth/key-store.js';

export interface SessionDeps {
  pool: Pool;
  auth: ConsoleAuth;
  sessionTtlMs: number;
  limit: SignInLimit;
  cookieSecure: 'auto' | 'always' | 'never';
  /** http.trusted_proxies */
  trustedProxies: readonly string[];
}

/** The sign-in route reads the console's headers and X-Forwarded-For, at this index. */
const SIGN_IN_HEADERS = [...CONSOLE_HEADERS, 'x-forwarded-for'] as const;
const H_FORWARDED_FOR = SIGN_IN_HEADERS.length - 1;

function sessionView(who: Principal, csrfToken: string, expiresAt: Date): Record<string, unknown> {
  return {
    object: 'session',
    role: who.role,
    organization_id: who.role === 'member' ? who.orgId : null,
    account: who.session?.accountId ? { id: who.session.accountId, email: who.session.email, name: who.session.name } : null,
    csrf_token: csrfToken,
    expires_at: expiresAt.toISOString(),
  };
}

function credentials(body: unknown): { email: string; password: string } | { adminToken: string } {
  const b = body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  const bad = (field: string, issue: string) => new GatewayError('invalid_request', { param: field, fieldDetails: [{ field, issue }] });
  if (typeof b.admin_token === 'string') {
    if (b.admin_token.length > 1024) throw bad('admin_token', 'is too long');
    return { adminToken: b.admin_token };
  }
  if (typeof b.email !== 'string' || b.email.length === 0 || b.email.length > 254) throw bad('email', 'must be an email address');
  if (typeof b.password !== 'string' || b.password.length === 0 || b.password.length > MAX_PASSWORD) throw bad('password', `must be 1 to ${MAX_PASSWORD} characters`);
  return { email: b.email.trim(), password: b.password };
}

export function sessionRoutes(deps: SessionDeps): Route[] {
  const { route, answer } = consoleRouteKit(deps.auth);
  const adminDigest = deps.auth.adminToken === null ? null : createHash('sha256').update(deps.auth.adminToken).digest();
  const secure = (ctx: RequestContext) => deps.cookieSecure === 'always' || (deps.cookieSecure === 'auto' && ctx.headers[H_PROTO].toLowerCase() === 'https');
  const ttlSeconds = Math.floor(deps.sessionTtlMs / 1000);
  const addressOf = clientAddressRule(deps.trustedProxies);

  const signIn: Route = {
    method: 'post',
    path: '/console/v1/sessions',
    surface: 'console',
    envelope: 'rest',
    readsBody: true,
    rawBody: true,
    headers: SIGN_IN_HEADERS,
    async handle(ctx) {
      parseBody(ctx, deps.auth.maxJsonDepth);
      const input = credentials(ctx.body);
      // Nothing to guess without a configured token: say how to turn operator sign-in on, instead of a wrong-password answer.
      if ('adminToken' in input && adminDigest === null) throw new GatewayError('operator_sign_in_off');
      const address = addressOf(Buffer.from(ctx.res.getRemoteAddressAsText()).toString(), ctx.headers[H_FORWARDED_FOR]);
      // Counted before anything is checked: of N concurrent tries at most the limit reach the check.
      const attempt = await beginAttempt(deps.pool, deps.limit, address, 'adminToken' in input ? null : input.email);
      if (attempt === null) throw new GatewayError('rate_limited', { retryAfterSeconds: Math.ceil(deps.limit.windowMs / 1000) });
      let who: { accountId: string | null; orgId: string | null } | null = null;
      if ('adminToken' in input) {
        const ok = adminDigest !== null && timingSafeEqual(createHash('sha256').update(input.adminToken).digest(), adminDigest);
        if (ok) who = { accountId: null, orgId: null };
      } else {
        const account = await accountByEmail(deps.pool, input.email);
        // An unknown or disabled account costs the same scrypt as a known one.
        const ok = await verifyPassword(input.password, account?.password_hash ?? DUMMY_HASH);
        if (ok && account !== null && account.disabled_at === null) who = { accountId: account.id, orgId: account.org_id };
      }
      // A refused try stays counted, even when its caller went away before the answer.
      if (who === null) throw new GatewayError('sign_in_refused');
      await forgive(deps.pool, attempt);
      if (ctx.aborted) return;
      const s = await createSession(deps.pool, who, deps.sessionTtlMs, deps.auth.adminToken);
      ctx.orgId = who.orgId;
      const principal: Principal =
        who.orgId === null ? { role: 'operator', session: null, token: null } : { role: 'member', orgId: who.orgId, session: null as never, token: s.token };
      const body = sessionView(principal, s.csrfToken, s.expiresAt);
      if (who.accountId !== null && !('adminToken' in input)) body.account = { id: who.accountId, email: input.email };
      sendJson(ctx, 201, JSON.stringify(body), [...NO_STORE, ['Set-Cookie', sessionCookie(s.token, ttlSeconds, secure(ctx))]]);
    },
  };

  /**
   * Whether the browser is signed in, always 200: the console page asks this
   * on load (web/src/console.ts), so a session cookie that expired or was
   * revoked costs no failing fetch (a 401 the browser would log in its
   * console). A stale cookie is cleared in the same answer, so the next page
   * load goes straight to sign-in without asking.
   */
  const status: Route = {
    method: 'get',
    path: '/console/v1/sessions/status',
    surface: 'console',
    envelope: 'rest',
    readsBody: false,
    headers: CONSOLE_HEADERS,
    async handle(ctx) {
      const token = readCookie(ctx.headers[H_COOKIE] ?? '', COOKIE);
      const session = token === null ? null : await findSession(deps.pool, token, deps.auth.adminToken);
      if (token === null || session === null) {
        const headers = token === null ? NO_STORE : [...NO_STORE, ['Set-Cookie', sessionCookie('', 0, secure(ctx))] as [string, string]];
        return sendJson(ctx, 200, JSON.stringify({ object: 'session_status', signed_in: false }), headers);
      }
      const who: Principal = session.orgId === null ? { role: 'operator', session, token } : { role: 'member', orgId: session.orgId, session, token };
      answer(ctx, 200, { ...sessionView(who, session.csrfToken, session.expiresAt), signed_in: true });
    },
  };

  return [
    signIn,
    status,
    route('get', '/console/v1/sessions/current', false, async (ctx, who) => {
      if (who.session === null) throw new GatewayError('not_signed_in');
      answer(ctx, 200, sessionView(who, who.session.csrfToken, who.session.expiresAt));
    }),
    route('del', '/console/v1/sessions/current', false, async (ctx, who) => {
      if (who.token === null) throw new GatewayError('not_signed_in');
      await revokeSession(deps.pool, who.token);
      sendJson(ctx, 200, JSON.stringify({ object: 'session', signed_out: true }), [...NO_STORE, ['Set-Cookie', sessionCookie('', 0, secure(ctx))]]);
    }),
    route('post', '/console/v1/organizations/:org_id/accounts', true, async (ctx) => {
      const input = parseAccountInput(ctx.body);
      if (!isUuid(ctx.params[0]) || !(await organizationExists(deps.pool, ctx.params[0]))) throw new GatewayError('organization_not_found');
      ctx.orgId = ctx.params[0];
      answer(ctx, 201, accountView(await createAccount(deps.pool, ctx.params[0], input)));
    }, { operatorOnly: true }),
    route('get', '/console/v1/organizations/:org_id/accounts', false, async (ctx, who) => {
      ownOrg(who, ctx.params[0]);
      if (!isUuid(ctx.params[0]) || !(await organizationExists(deps.pool, ctx.params[0]))) throw new GatewayError('organization_not_found');
      answer(ctx, 200, { object: 'list', data: (await listAccounts(deps.pool, ctx.params[0])).map(accountView), has_more: false, next_cursor: null });
    }),
    route('post', '/console/v1/accounts/:account_id/disable', false, async (ctx) => {
      const row = isUuid(ctx.params[0]) ? await getAccount(deps.pool, ctx.params[0]) : null;
      if (row === null) throw new GatewayError('account_not_found');
      answer(ctx, 200, accountView((await disableAccount(deps.pool, row.id))!));
    }, { operatorOnly: true }),
  ];
}
