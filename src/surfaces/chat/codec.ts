// Chat completions, served natively: the caller's body goes to chat
// completions suppliers with only the upstream model name and the members the
// spec says are not carried changed; replies come back as the gateway's own
// objects (its request id, the model as the caller named it).
import { outputCeiling } from '../../billing/bound.js';
import type { Metered } from '../../billing/types.js';
import type { Route } from '../../catalog/types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { REPLY_POOL_BYTES } from '../reply-pool.js';
import type { CallInfo, ModelSurface, Prepared, ReplyMeter } from '../surface.js';
import { chatInputText, prepareChat } from './prepare.js';
import { ChatStream, meteredFromUsage, normalizeFinish, usageObject } from './stream.js';

export { DEFAULT_CEILING } from './prepare.js';

type Body = Record<string, any>;

/** A request the demo catalog answers (README; the registry test sends it with a long text). */
export const chatExample = (text: string): object => ({ model: 'swift', max_tokens: 16, messages: [{ role: 'user', content: text }] });

/** What the gateway keeps of a supplier's reply: plain data only. */
export interface DecodedChat {
  choices: Body[];
  created: number | null;
  usage: Metered | null;
  /** Text and tool arguments produced, for a local count when the supplier reported no usage. */
  produced: string;
  /** A choice was cut by the ceiling. */
  cut: boolean;
}

/** Prepends the per-route members to the body serialized once in prepare(). */
function upstreamBody(prepared: Prepared, route: Route, maxOutputTokens: number | null): string {
  const bound = prepared.decoded.bound;
  // Exactly one output bound, the reserved one, or the charge could outgrow the hold (prepare left the caller's out of `rest`).
  let head = '{"model":' + JSON.stringify(route.upstreamModel) + ',"' + bound.ceilingParam + '":' + outputCeiling(bound, maxOutputTokens);
  // Settlement needs the supplier's usage even when the caller did not ask for it.
  if (prepared.decoded.stream) head += ',"stream_options":{"include_usage":true}';
  return prepared.rest === '{}' ? head + '}' : head + ',' + prepared.rest.slice(1);
}

export function decodeChatReply(upstream: unknown): DecodedChat {
  const reply = upstream as Body;
  if (reply === null || typeof reply !== 'object' || !Array.isArray(reply.choices)) throw new GatewayError('upstream_error');
  let produced = '';
  let cut = false;
  const choices = reply.choices.map((c: Body, i: number) => {
    const message = c.message ?? { role: 'assistant', content: '' };
    if (typeof message.content === 'string') produced += message.content;
    for (const tc of message.tool_calls ?? []) produced += tc.function?.arguments ?? '';
    const finish = normalizeFinish(c.finish_reason) ?? 'stop';
    if (finish === 'length') cut = true;
    return { finish_reason: finish, index: c.index ?? i, message };
  });
  return {
    choices,
    created: typeof reply.created === 'number' ? reply.created : null,
    usage: reply.usage ? meteredFromUsage(reply.usage) : null,
    produced,
    cut,
  };
}

function meter(reply: DecodedChat): ReplyMeter {
  return { usage: reply.usage, imageUnits: 0, producedText: reply.produced, outcome: reply.cut ? 'incomplete' : 'completed', warning: null };
}

function render(reply: DecodedChat, call: CallInfo, settled: Metered): string {
  const created = reply.created ?? call.created;
  return JSON.stringify({ choices: reply.choices, created, id: call.requestId, model: call.model, object: 'chat.completion', usage: usageObject(settled) });
}

export const chatCodec: ModelSurface<DecodedChat> = {
  protocol: 'chat_completions',
  path: '/v1/chat/completions',
  envelope: 'openai',
  carrier: 'bearer',
  modality: 'text_generation',
  prepare: prepareChat,
  upstreamBody,
  inputText: chatInputText,
  decodeReply: decodeChatReply,
  replyPoolBytes: REPLY_POOL_BYTES,
  meter,
  render,
  stream: (call, prepared) => new ChatStream(call, prepared.meta.includeUsage === true),
};
