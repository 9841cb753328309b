// What the pipeline knows of an authenticated API key. The secret itself is
// never held: only its hash (in the key index) and the two display fragments.
import type { ModalityCode } from '../catalog/types.js';
import type { Funding } from '../money/money.js';

export type { Funding };

/** An absent axis means every value on that axis; null means unrestricted. */
export interface KeyScope {
  modality_codes?: ModalityCode[];
  /** Catalog model_id UUIDs. */
  model_ids?: string[];
  /** Catalog vendor ids. */
  vendor_ids?: string[];
}

export interface ApiKey {
  id: string;
  orgId: string;
  name: string;
  /** First 6 characters of the random part. */
  prefix: string;
  /** Last 4 characters of the key. */
  last4: string;
  version: number;
  scope: KeyScope | null;
  binding: string;
  funding: Funding;
  /** ms since epoch, or null */
  expiresAt: number | null;
  /** The key's own request quota (calls per sliding minute), enforced by its organization's ledger actor; null: none. */
  quotaPerMinute: number | null;
}

/** Which headers a surface reads the key from (spec, Authentication 1–4). */
export type Carrier = 'bearer' | 'bearer_or_x_api_key';

export interface Authenticator {
  /**
   * The live key presented, or null for every kind of refusal (no header,
   * malformed, unknown, revoked, expired): the caller answers one 401.
   * No database query for a warm key or for a hash no live key has, and no
   * promise either: one is returned only when the store must be read.
   */
  authenticate(authorization: string, xApiKey: string, carrier: Carrier, presented?: Buffer | null): ApiKey | null | Promise<ApiKey | null>;
  /**
   * The synchronous first half of authenticate(), before a body is read: the
   * presented key's hash when the in-memory index holds it live (pass it to
   * authenticate() as `presented`), null for every refusal, with the same
   * work for each and no database query.
   */
  precheck(authorization: string, xApiKey: string, carrier: Carrier): Buffer | null;
}
