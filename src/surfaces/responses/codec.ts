// Responses, served natively: the caller's body goes to suppliers that speak
// the responses protocol with only what must change (the upstream model, the
// one output bound, store false, instructions as the leading system turn, a
// developer turn as system, and the members accepted with no effect left
// out); replies come back as the gateway's own objects (its id, the model as
// the caller named it, the usage as settled). No translation through chat.
// previous_response_id is checked for ownership in verify() and never sent;
// a response's id is recorded as the caller's when it is handed out (a
// stream's response.created, a unary reply in answered()), whatever the ending.
import { outputCeiling } from '../../billing/bound.js';
import type { Route } from '../../catalog/types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { REPLY_POOL_BYTES } from '../reply-pool.js';
import type { CallInfo, ModelSurface, Prepared, SurfaceServices } from '../surface.js';
import { prepareResponses, responsesInputText } from './prepare.js';
import { decodeReply, meterReply, renderReply, responseId, type DecodedReply } from './reply.js';
import { ResponsesStream } from './stream.js';

/** A request the demo catalog answers (README; the registry test sends it with a long text). */
export const responsesExample = (text: string): object => ({ model: 'swift', max_output_tokens: 16, input: text });

/** Prepends the per-route members to the body serialized once in prepare(). */
function upstreamBody(prepared: Prepared, route: Route, maxOutputTokens: number | null): string {
  // store is always false upstream: the gateway keeps nothing, and asks its suppliers to keep nothing.
  const head = '{"model":' + JSON.stringify(route.upstreamModel) + ',"max_output_tokens":' + outputCeiling(prepared.decoded.bound, maxOutputTokens) + ',"store":false';
  return prepared.rest === '{}' ? head + '}' : head + ',' + prepared.rest.slice(1);
}

/** previous_response_id: one the caller's organization owns, or refused by name (unknown and another's alike). */
async function verify(prepared: Prepared, call: CallInfo, services: SurfaceServices): Promise<void> {
  const previous = prepared.meta.previousResponseId;
  if (typeof previous !== 'string') return;
  let owns: boolean;
  try {
    owns = await services.responseOwners.owns(previous, call.orgId);
  } catch {
    throw new GatewayError('service_unavailable');
  }
  if (!owns) throw new GatewayError('invalid_request', { param: 'previous_response_id' });
}

export const responsesCodec: ModelSurface<DecodedReply> = {
  protocol: 'responses',
  path: '/v1/responses',
  envelope: 'openai',
  carrier: 'bearer',
  modality: 'text_generation',
  prepare: prepareResponses,
  verify,
  upstreamBody,
  inputText: responsesInputText,
  decodeReply,
  replyPoolBytes: REPLY_POOL_BYTES,
  meter: meterReply,
  render: renderReply,
  // Recorded before the reply (or response.created) is sent, so a caller continuing at once finds the id.
  answered: (call, services) => services.responseOwners.record(responseId(call), call.orgId),
  stream: (call, _prepared, services) => new ResponsesStream(call, () => services.responseOwners.record(responseId(call), call.orgId)),
};
