// Messages, served natively: the caller's body goes to suppliers that speak
// the messages protocol with only the upstream model name and the output
// bound set (and the members the spec accepts with no effect left out);
// replies come back as the gateway's own objects (its request id, the model
// as the caller named it, the usage as settled). No translation through chat.
import { outputCeiling } from '../../billing/bound.js';
import type { Route } from '../../catalog/types.js';
import { REPLY_POOL_BYTES } from '../reply-pool.js';
import type { ModelSurface, Prepared } from '../surface.js';
import { messagesInputText, prepareMessages } from './prepare.js';
import { decodeReply, meterReply, renderReply, type DecodedReply } from './reply.js';
import { MessagesStream } from './stream.js';

/** A request the demo catalog answers (README; the registry test sends it with a long text). */
export const messagesExample = (text: string): object => ({ model: 'quill', max_tokens: 16, messages: [{ role: 'user', content: text }] });

/** Prepends the per-route members to the body serialized once in prepare(). */
function upstreamBody(prepared: Prepared, route: Route, maxOutputTokens: number | null): string {
  const head = '{"model":' + JSON.stringify(route.upstreamModel) + ',"max_tokens":' + outputCeiling(prepared.decoded.bound, maxOutputTokens);
  return prepared.rest === '{}' ? head + '}' : head + ',' + prepared.rest.slice(1);
}

export const messagesCodec: ModelSurface<DecodedReply> = {
  protocol: 'native_messages',
  path: '/v1/messages',
  envelope: 'messages',
  carrier: 'bearer_or_x_api_key',
  modality: 'text_generation',
  prepare: prepareMessages,
  upstreamBody,
  inputText: messagesInputText,
  decodeReply,
  replyPoolBytes: REPLY_POOL_BYTES,
  meter: meterReply,
  render: renderReply,
  stream: (call) => new MessagesStream(call),
};
