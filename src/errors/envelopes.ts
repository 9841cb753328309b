// The six error envelopes of the spec. Each takes the one internal error value
// and the request id and returns the JSON text the surface sends.
import type { GatewayError } from './gateway-error.js';

/** Version of the service's own REST error envelope. */
export const REST_ENVELOPE_VERSION = '2026-11-01';

export type EnvelopeKind = 'openai' | 'embeddings' | 'images' | 'messages' | 'rest';

/** Classes the chat/responses envelope allows; `overloaded_error` is the messages protocol's own. */
function openaiClass(err: GatewayError): string {
  return err.type === 'overloaded_error' ? 'api_error' : err.type;
}

/** Chat completions and responses. */
function openaiEnvelope(err: GatewayError): string {
  return JSON.stringify({
    error: { message: err.message, type: openaiClass(err), param: err.param, code: err.code },
  });
}

/** Embeddings: `param` added when a member is at fault, so a refusal names it (encoding_format, input). */
function embeddingsEnvelope(err: GatewayError, requestId: string): string {
  const error: Record<string, unknown> = { code: err.code, message: err.message, request_id: requestId, type: openaiClass(err) };
  if (err.param !== null) error.param = err.param;
  return JSON.stringify({ error });
}

/** Images: `param` is always null, `type` a coarse class. */
function imagesEnvelope(err: GatewayError): string {
  return JSON.stringify({
    error: { code: err.code, message: err.message, param: null, type: openaiClass(err) },
  });
}

/** Messages and count_tokens. */
function messagesEnvelope(err: GatewayError): string {
  const error: Record<string, unknown> = { type: err.type, message: err.message, code: err.code };
  if (err.param !== null) error.param = err.param;
  return JSON.stringify({ type: 'error', error });
}

/** The model list and the service's own REST errors (console included). */
function restEnvelope(err: GatewayError, requestId: string): string {
  const error: Record<string, unknown> = {
    code: err.code,
    message: err.message,
    request_id: requestId,
    version: REST_ENVELOPE_VERSION,
  };
  if (err.fieldDetails !== null) error.field_details = err.fieldDetails;
  if (err.limit !== null) error.limit = err.limit;
  return JSON.stringify({ error });
}

export function renderError(kind: EnvelopeKind, err: GatewayError, requestId: string): string {
  switch (kind) {
    case 'openai':
      return openaiEnvelope(err);
    case 'embeddings':
      return embeddingsEnvelope(err, requestId);
    case 'images':
      return imagesEnvelope(err);
    case 'messages':
      return messagesEnvelope(err);
    case 'rest':
      return restEnvelope(err, requestId);
  }
}
