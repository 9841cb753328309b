// The shape of each error envelope, as a caller checks it (README, Errors).
// Returns what is wrong, or null when the body is a well-formed envelope.

const REST_KEYS = new Set(['code', 'message', 'request_id', 'version', 'field_details', 'limit']);
const CHAT_CLASSES = new Set(['invalid_request_error', 'not_found_error', 'authentication_error', 'permission_error', 'rate_limit_error', 'api_error']);

/** The service's REST envelope (model list, ops, console, unknown paths). */
export function restEnvelopeFault(body: any, requestId: string | undefined): string | null {
  const e = body?.error;
  if (e === null || typeof e !== 'object') return 'no error object';
  for (const k of Object.keys(e)) if (!REST_KEYS.has(k)) return `unexpected member ${k}`;
  if (typeof e.code !== 'string' || typeof e.message !== 'string' || typeof e.version !== 'string') return 'code, message or version missing';
  if (e.request_id !== requestId) return `request_id ${e.request_id} is not X-Request-Id ${requestId}`;
  return null;
}

/** Chat completions (and responses): {error: {message, type, param, code}}. */
export function chatEnvelopeFault(body: any): string | null {
  const e = body?.error;
  if (e === null || typeof e !== 'object') return 'no error object';
  const keys = Object.keys(e).sort().join(',');
  if (keys !== 'code,message,param,type') return `members ${keys}`;
  if (typeof e.message !== 'string' || typeof e.code !== 'string') return 'message or code missing';
  if (!CHAT_CLASSES.has(e.type)) return `class ${e.type}`;
  if (e.param !== null && typeof e.param !== 'string') return 'param neither string nor null';
  return null;
}
