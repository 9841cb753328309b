// Key operations as the operator performs them, one implementation for the
// console API, the `tollgate` command and the first-start demo: validate,
// write in one transaction (the change log row included), then notify. A
// failed notification is harmless: every worker polls the change log.
import { randomUUID } from 'node:crypto';
import { createRequestHash, parseCreateInput, parseEditInput } from '../auth/key-input.js';
import { isUuid } from '../store/uuid.js';
import { resolveScopeNames } from './scope-names.js';
import { generateKey } from '../auth/key-format.js';
import { getKey, insertKey, listKeys, organizationExists, revokeKey, unknownScopeRefs, updateKey, type KeyRow } from '../auth/key-store.js';
import { GatewayError } from '../errors/gateway-error.js';
import { inTransaction, type Pool, type PoolClient } from '../store/pool.js';

/**
 * Waits, after a change, for what the writer must see before it answers (the console: every worker of its instance
 * current). Announcing the change is not its job: the store does it, in the change's transaction (migration 011).
 */
export type KeyNotifier = ((keyId: string) => Promise<void>) | null;

export interface Created {
  row: KeyRow;
  /** The secret, present exactly once: never on a replay. */
  secret: string | null;
  replay: boolean;
}

const MAX_IDEMPOTENCY_KEY = 255;

function idempotencyKey(header: string | null): string | null {
  if (header === null || header === '') return null;
  if (header.length > MAX_IDEMPOTENCY_KEY || /[\u0000-\u001f\u007f]/.test(header)) {
    throw new GatewayError('invalid_request', {
      param: 'Idempotency-Key',
      fieldDetails: [{ field: 'Idempotency-Key', issue: `must be 1 to ${MAX_IDEMPOTENCY_KEY} printable characters` }],
    });
  }
  return header;
}

async function requireOrganization(db: Pool | PoolClient, orgId: string): Promise<void> {
  if (!isUuid(orgId) || !(await organizationExists(db, orgId))) throw new GatewayError('organization_not_found');
}

export class KeyService {
  constructor(
    private readonly pool: Pool,
    private readonly notify: KeyNotifier,
  ) {}

  private async changed(keyId: string): Promise<void> {
    await this.notify?.(keyId).catch(() => {});
  }

  async create(orgId: string, body: unknown, idempotencyHeader: string | null = null): Promise<Created> {
    const idemKey = idempotencyKey(idempotencyHeader);
    const input = parseCreateInput(await resolveScopeNames(this.pool, body));
    const key = generateKey();
    const id = randomUUID();
    const idem = idemKey === null ? null : { key: idemKey, requestHash: createRequestHash(input) };
    const { row, replay } = await inTransaction(this.pool, async (c) => {
      await requireOrganization(c, orgId);
      const unknown = await unknownScopeRefs(c, input.scope);
      if (unknown.length > 0) throw new GatewayError('invalid_request', { param: unknown[0].field, fieldDetails: unknown });
      return insertKey(c, id, orgId, input, key, idem);
    });
    if (!replay) await this.changed(id);
    return { row, secret: replay ? null : key.secret, replay };
  }

  async list(orgId: string): Promise<KeyRow[]> {
    await requireOrganization(this.pool, orgId);
    return listKeys(this.pool, orgId);
  }

  async get(keyId: string): Promise<KeyRow> {
    const row = isUuid(keyId) ? await getKey(this.pool, keyId) : null;
    if (row === null) throw new GatewayError('key_not_found');
    return row;
  }

  async edit(keyId: string, body: unknown): Promise<KeyRow> {
    const edit = parseEditInput(await resolveScopeNames(this.pool, body));
    if (!isUuid(keyId)) throw new GatewayError('key_not_found');
    const row = await inTransaction(this.pool, async (c) => {
      if (edit.scope !== undefined) {
        const unknown = await unknownScopeRefs(c, edit.scope);
        if (unknown.length > 0) throw new GatewayError('invalid_request', { param: unknown[0].field, fieldDetails: unknown });
      }
      return updateKey(c, keyId, edit);
    });
    await this.changed(keyId);
    return row;
  }

  async revoke(keyId: string): Promise<KeyRow> {
    if (!isUuid(keyId)) throw new GatewayError('key_not_found');
    const { row, changed } = await inTransaction(this.pool, (c) => revokeKey(c, keyId));
    if (changed) await this.changed(keyId);
    return row;
  }
}
