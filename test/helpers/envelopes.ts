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

const MESSAGES_CLASSES = new Set([...CHAT_CLASSES, 'overloaded_error']);

/** Messages and count_tokens: {type: "error", error: {type, message, code?, param?}}. */
export function messagesEnvelopeFault(body: any): string | null {
  if (body?.type !== 'error') return 'type is not "error"';
  const e = body.error;
  if (e === null || typeof e !== 'object') return 'no error object';
  for (const k of Object.keys(e)) if (!['type', 'message', 'code', 'param'].includes(k)) return `unexpected member ${k}`;
  if (typeof e.message !== 'string') return 'message missing';
  if (!MESSAGES_CLASSES.has(e.type)) return `class ${e.type}`;
  return null;
}

/** Embeddings: {error: {code, message, request_id?, type, param?}}. */
export function embeddingsEnvelopeFault(body: any): string | null {
  const e = body?.error;
  if (e === null || typeof e !== 'object') return 'no error object';
  for (const k of Object.keys(e)) if (!['code', 'message', 'request_id', 'type', 'param'].includes(k)) return `unexpected member ${k}`;
  if (typeof e.code !== 'string' || typeof e.message !== 'string' || typeof e.type !== 'string') return 'code, message or type missing';
  return null;
}

/** Images: {error: {code, message, param: null, type}}. */
export function imagesEnvelopeFault(body: any): string | null {
  const e = body?.error;
  if (e === null || typeof e !== 'object') return 'no error object';
  const keys = Object.keys(e).sort().join(',');
  if (keys !== 'code,message,param,type') return `members ${keys}`;
  if (e.param !== null) return 'param is not null';
  if (typeof e.code !== 'string' || typeof e.message !== 'string' || typeof e.type !== 'string') return 'code, message or type missing';
  return null;
}
