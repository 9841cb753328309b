// The one error catalogue: every refusal the service can give, with its HTTP
// status, its error class and a fixed safe sentence. Surfaces only choose the
// envelope; suppliers map upstream failures into these codes. The README's
// table is pinned to this file by test/errors/catalogue.test.ts.

/** Error classes of the chat/responses envelope; messages adds `overloaded_error`. */
export type ErrorClass =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error';

export interface CatalogueEntry {
  readonly status: number;
  readonly type: ErrorClass;
  readonly message: string;
}

export const CATALOGUE = {
  invalid_json: { status: 400, type: 'invalid_request_error', message: 'The request body is not valid JSON.' },
  invalid_path: {
    status: 400,
    type: 'invalid_request_error',
    message: 'A segment of the request path is not valid percent-encoded UTF-8.',
  },
  nesting_too_deep: {
    status: 400,
    type: 'invalid_request_error',
    message: 'A member of the request nests arrays or objects deeper than this service accepts; see param.',
  },
  invalid_request: {
    status: 400,
    type: 'invalid_request_error',
    message: 'A member of the request is missing, unknown, or has a value outside what it accepts; see param.',
  },
  unsupported_media_type: {
    status: 415,
    type: 'invalid_request_error',
    message: 'Request bodies must be JSON, sent with Content-Type: application/json.',
  },
  body_too_large: { status: 413, type: 'invalid_request_error', message: 'The request body is larger than this service accepts.' },
  invalid_api_key: { status: 401, type: 'authentication_error', message: 'The request did not present a valid API key.' },
  scope_denied: { status: 403, type: 'permission_error', message: 'This API key is not allowed to make this request.' },
  insufficient_funds: {
    status: 402,
    type: 'permission_error',
    message: 'The organization does not have enough funds to reserve this request.',
  },
  model_not_found: {
    status: 404,
    type: 'not_found_error',
    message: 'The model does not exist or is not served on this surface.',
  },
  not_found: { status: 404, type: 'not_found_error', message: 'There is nothing at this path.' },
  organization_not_found: { status: 404, type: 'not_found_error', message: 'No organization has this id.' },
  key_not_found: { status: 404, type: 'not_found_error', message: 'No API key has this id.' },
  immutable_field: {
    status: 422,
    type: 'invalid_request_error',
    message: 'A member of the request is fixed at creation and cannot be changed; see field_details.',
  },
  key_revoked: { status: 409, type: 'invalid_request_error', message: 'This API key is revoked; a revoked key cannot be edited.' },
  method_not_allowed: { status: 405, type: 'invalid_request_error', message: 'This path does not accept this method.' },
  version_conflict: { status: 409, type: 'invalid_request_error', message: 'The object changed since the version you sent.' },
  money_limit_exceeded: {
    status: 409,
    type: 'invalid_request_error',
    message: 'The credit would take the balance or package above 9007199254.740991, the most this service holds exactly.',
  },
  idempotency_conflict: {
    status: 409,
    type: 'invalid_request_error',
    message: 'This Idempotency-Key was already used with a different request.',
  },
  not_signed_in: { status: 401, type: 'authentication_error', message: 'Sign in to the console first; the session is missing, expired or ended.' },
  sign_in_refused: { status: 401, type: 'authentication_error', message: 'The email or password is wrong.' },
  operator_sign_in_off: {
    status: 403,
    type: 'permission_error',
    message: 'Operator sign-in is off: this gateway was started without ADMIN_TOKEN. Restart it with ADMIN_TOKEN set (at least 16 characters) and sign in with that token.',
  },
  csrf_token_invalid: { status: 403, type: 'permission_error', message: 'A change needs the session CSRF token in X-CSRF-Token.' },
  operator_only: { status: 403, type: 'permission_error', message: 'Only an operator can do this.' },
  account_not_found: { status: 404, type: 'not_found_error', message: 'No console account has this id.' },
  email_taken: { status: 409, type: 'invalid_request_error', message: 'A console account with this email already exists.' },
  rate_limited: { status: 429, type: 'rate_limit_error', message: 'Too many requests; retry after the time in Retry-After.' },
  concurrency_limited: {
    status: 429,
    type: 'rate_limit_error',
    message: 'This API key has too many calls in progress; retry when one of them has finished.',
  },
  upstream_error: { status: 502, type: 'api_error', message: 'The model supplier failed to answer.' },
  upstream_overloaded: { status: 529, type: 'overloaded_error', message: 'Every supplier of this model is overloaded.' },
  upstream_timeout: { status: 504, type: 'api_error', message: 'The model supplier did not answer in time.' },
  service_unavailable: { status: 503, type: 'api_error', message: 'The service cannot take requests right now.' },
  internal_error: { status: 500, type: 'api_error', message: 'The service failed while handling the request.' },
} as const satisfies Record<string, CatalogueEntry>;

export type ErrorCode = keyof typeof CATALOGUE;
