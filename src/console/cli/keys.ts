// `tollgate keys create|list|show|edit|revoke`: flags become the console
// API's request body and go through the same KeyService, so the command and
// the API accept, refuse and store exactly the same things.
import { consoleKey } from '../../auth/key-view.js';
import type { KeyRow } from '../../auth/key-store.js';
import { KeyService } from '../key-service.js';
import { list, printJson, table, UsageError, type CliContext, type Command, type OptionSpec, type OptionValues } from './command.js';

const SCOPE_OPTIONS: Record<string, OptionSpec> = {
  modalities: { type: 'string', help: 'allowed modality codes, comma-separated (text_generation, embeddings, image_generation)' },
  models: { type: 'string', help: 'allowed models, comma-separated: names or aliases (au-atlas-2, atlas) or model_id UUIDs' },
  vendors: { type: 'string', help: 'allowed vendors, comma-separated: codes (aurora) or vendor id UUIDs' },
};
const JSON_OPTION: Record<string, OptionSpec> = { json: { type: 'boolean', help: 'print JSON' } };
const QUOTA_OPTION: Record<string, OptionSpec> = {
  'quota-per-minute': { type: 'string', help: 'the key\'s own limit: at most N calls in any sliding minute (1 to 1000000)' },
};

/** A flag's digits as a number; anything else goes through as given, for the key validation to refuse with its field detail. */
function quotaFrom(v: unknown): unknown {
  return typeof v === 'string' && /^\d{1,15}$/.test(v) ? Number(v) : v;
}

function quotaText(v: unknown): string {
  return v === null || v === undefined ? 'none' : `${String(v)}/min`;
}

/** The scope flags as a console scope object; undefined when none is given. */
function scopeFrom(values: OptionValues): Record<string, string[]> | undefined {
  const scope: Record<string, string[]> = {};
  const modalities = list(values.modalities);
  const models = list(values.models);
  const vendors = list(values.vendors);
  if (modalities !== undefined) scope.modality_codes = modalities;
  if (models !== undefined) scope.model_ids = models;
  if (vendors !== undefined) scope.vendor_ids = vendors;
  return Object.keys(scope).length === 0 ? undefined : scope;
}

function scopeText(scope: unknown): string {
  if (scope === 'unrestricted') return 'unrestricted';
  return Object.entries(scope as Record<string, string[]>)
    .map(([axis, ids]) => `${axis}=${ids.join(',')}`)
    .join(' ');
}

function describe(view: Record<string, unknown>): string {
  return (
    `Key ${String(view.id)} "${String(view.name)}" (${String(view.display)})\n` +
    `  organization: ${String(view.organization_id)}\n` +
    `  status:       ${String(view.status)}    version: ${String(view.version)}\n` +
    `  scope:        ${scopeText(view.scope)}\n` +
    `  binding:      ${String(view.binding)}    funding: ${String(view.funding)}\n` +
    `  quota:        ${quotaText(view.quota_per_minute)}\n` +
    `  created:      ${String(view.created_at)}    expires: ${String(view.expires_at ?? 'never')}` +
    (view.revoked_at ? `    revoked: ${String(view.revoked_at)}` : '') +
    '\n'
  );
}

async function service(ctx: CliContext): Promise<KeyService> {
  // Running gateways hear of the change from the store itself, at commit (migration 011).
  return new KeyService((await ctx.store()).pool, null);
}

function show(ctx: CliContext, row: KeyRow, json: boolean): void {
  const view = consoleKey(row);
  if (json) printJson(ctx, view);
  else ctx.out(describe(view));
}

function one(positionals: string[], what: string, usage: string): string {
  if (positionals.length !== 1) throw new UsageError(`name ${what}: ${usage}`);
  return positionals[0];
}

export const keyCommands: Command[] = [
  {
    path: ['keys', 'create'],
    args: '<org_id>',
    summary: 'create an API key; its secret is printed once',
    options: {
      name: { type: 'string', help: 'the key\'s name (required)' },
      ...SCOPE_OPTIONS,
      binding: { type: 'string', help: 'binding label, fixed for the key\'s life (default organization)' },
      funding: { type: 'string', help: 'balance (default) or package' },
      'expires-at': { type: 'string', help: 'expiry, ISO 8601 (default: never)' },
      ...QUOTA_OPTION,
      'idempotency-key': { type: 'string', help: 'repeat-safe creation: the same key again answers the first key\'s metadata' },
      ...JSON_OPTION,
    },
    async run(positionals, values, ctx) {
      const orgId = one(positionals, 'the organization', 'tollgate keys create <org_id> --name NAME');
      if (typeof values.name !== 'string') throw new UsageError('--name is required');
      const body: Record<string, unknown> = { name: values.name };
      const scope = scopeFrom(values);
      if (scope !== undefined) body.scope = scope;
      if (values.binding !== undefined) body.binding = values.binding;
      if (values.funding !== undefined) body.funding = values.funding;
      if (values['expires-at'] !== undefined) body.expires_at = values['expires-at'];
      if (values['quota-per-minute'] !== undefined) body.quota_per_minute = quotaFrom(values['quota-per-minute']);
      const idem = typeof values['idempotency-key'] === 'string' ? values['idempotency-key'] : null;
      const { row, secret, replay } = await (await service(ctx)).create(orgId, body, idem);
      if (values.json === true) return printJson(ctx, secret === null ? consoleKey(row) : { ...consoleKey(row), secret });
      ctx.out(describe(consoleKey(row)));
      if (replay) ctx.err('This Idempotency-Key was used before: this is the key it created. Its secret was shown then and cannot be shown again.\n');
      else ctx.out(`\n    ${secret}\n\nThis secret will not be shown again: store it now.\n`);
    },
  },
  {
    path: ['keys', 'list'],
    args: '<org_id>',
    summary: 'list an organization\'s keys with their status',
    options: { ...JSON_OPTION },
    async run(positionals, values, ctx) {
      const orgId = one(positionals, 'the organization', 'tollgate keys list <org_id>');
      const rows = await (await service(ctx)).list(orgId);
      const views = rows.map((r) => consoleKey(r));
      if (values.json === true) return printJson(ctx, { object: 'list', data: views });
      const cells = views.map((v) => [v.id, v.name, v.display, v.version, v.status, scopeText(v.scope), v.funding, quotaText(v.quota_per_minute), v.expires_at ?? 'never'].map(String));
      ctx.out(table(['ID', 'NAME', 'KEY', 'VERSION', 'STATUS', 'SCOPE', 'FUNDING', 'QUOTA', 'EXPIRES'], cells));
    },
  },
  {
    path: ['keys', 'show'],
    args: '<key_id>',
    summary: 'show one key (its version is what `keys edit` needs)',
    options: { ...JSON_OPTION },
    async run(positionals, values, ctx) {
      const keyId = one(positionals, 'the key', 'tollgate keys show <key_id>');
      show(ctx, await (await service(ctx)).get(keyId), values.json === true);
    },
  },
  {
    path: ['keys', 'edit'],
    args: '<key_id>',
    summary: 'edit a key\'s name, scope, funding, expiry or quota (its binding never changes)',
    options: {
      version: { type: 'string', help: 'the version you are editing (a stale one is refused: someone edited the key since you read it)' },
      force: { type: 'boolean', help: 'edit whatever version the key is at now, instead of --version' },
      name: { type: 'string', help: 'new name' },
      ...SCOPE_OPTIONS,
      unrestricted: { type: 'boolean', help: 'remove every scope restriction' },
      funding: { type: 'string', help: 'balance or package' },
      'expires-at': { type: 'string', help: 'new expiry, ISO 8601' },
      'no-expiry': { type: 'boolean', help: 'make the key never expire' },
      ...QUOTA_OPTION,
      'no-quota': { type: 'boolean', help: 'remove the key\'s own quota (the organization\'s still applies)' },
      ...JSON_OPTION,
    },
    async run(positionals, values, ctx) {
      const keyId = one(positionals, 'the key', 'tollgate keys edit <key_id> --version N ...');
      const keys = await service(ctx);
      if (values.version !== undefined && values.force === true) throw new UsageError('--version and --force exclude each other');
      let version: number;
      if (values.force === true) version = (await keys.get(keyId)).version;
      else if (typeof values.version === 'string' && /^\d+$/.test(values.version)) version = Number(values.version);
      else {
        // Offer what the caller needs rather than send them to another command.
        const current = (await keys.get(keyId)).version;
        throw new UsageError(`--version N is required: the key is at version ${current} now (--version ${current}), or --force to edit whatever version it is at`);
      }
      const body: Record<string, unknown> = { version };
      if (values.name !== undefined) body.name = values.name;
      const scope = scopeFrom(values);
      if (scope !== undefined && values.unrestricted === true) throw new UsageError('--unrestricted and scope flags exclude each other');
      if (scope !== undefined) body.scope = scope;
      if (values.unrestricted === true) body.scope = 'unrestricted';
      if (values.funding !== undefined) body.funding = values.funding;
      if (values['expires-at'] !== undefined && values['no-expiry'] === true) throw new UsageError('--expires-at and --no-expiry exclude each other');
      if (values['expires-at'] !== undefined) body.expires_at = values['expires-at'];
      if (values['no-expiry'] === true) body.expires_at = null;
      if (values['quota-per-minute'] !== undefined && values['no-quota'] === true) throw new UsageError('--quota-per-minute and --no-quota exclude each other');
      if (values['quota-per-minute'] !== undefined) body.quota_per_minute = quotaFrom(values['quota-per-minute']);
      if (values['no-quota'] === true) body.quota_per_minute = null;
      show(ctx, await keys.edit(keyId, body), values.json === true);
    },
  },
  {
    path: ['keys', 'revoke'],
    args: '<key_id>',
    summary: 'revoke a key: every worker refuses it within a second',
    options: { ...JSON_OPTION },
    async run(positionals, values, ctx) {
      const keyId = one(positionals, 'the key', 'tollgate keys revoke <key_id>');
      show(ctx, await (await service(ctx)).revoke(keyId), values.json === true);
    },
  },
];
