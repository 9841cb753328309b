// Chat completions, served natively: the caller's body goes to chat
// completions suppliers with only the upstream model name and the members the
// spec says are not carried changed; replies come back as the gateway's own
// objects (its request id, the model as the caller named it).
import type { Metered } from '../../billing/types.js';
import type { Route } from '../../catalog/types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { CallInfo, Decoded, SurfaceCodec, UnaryResult } from '../surface.js';
import { assertValid, compile } from '../validate.js';
import { chatRequestSchema } from './schema.js';
import { ChatStream, meteredFromUsage, usageObject } from './stream.js';

/** Spec, chat rule 1: the ceiling when neither max_tokens nor max_completion_tokens is stated. */
export const DEFAULT_CEILING = 32768;

const validate = compile(chatRequestSchema);

type Body = Record<string, any>;

function ceilingOf(body: Body): number | null {
  const a = body.max_tokens ?? null;
  const b = body.max_completion_tokens ?? null;
  if (a !== null && b !== null && a !== b) throw new GatewayError('invalid_request', { param: 'max_completion_tokens' });
  return b ?? a;
}

function decode(raw: unknown, bodyBytes: number): Decoded {
  assertValid(validate, raw);
  const body = raw as Body;
  const ceiling = ceilingOf(body);
  if (body.tool_choice !== undefined && typeof body.tool_choice === 'object') {
    const name = body.tool_choice.function.name;
    if (!(body.tools ?? []).some((t: Body) => t.function.name === name)) throw new GatewayError('invalid_request', { param: 'tool_choice' });
  }
  return {
    model: body.model,
    stream: body.stream === true,
    bound: { inputTokens: bodyBytes, outputTokens: (ceiling ?? DEFAULT_CEILING) * (body.n ?? 1), imageUnits: 0 },
  };
}

function upstreamBody(raw: Body, decoded: Decoded, route: Route, maxOutputTokens: number | null): string {
  const body: Body = { ...raw, model: route.upstreamModel };
  // Accepted and not carried (spec): the model's own default effort applies.
  delete body.reasoning_effort;
  if (raw.messages.some((m: Body) => m.cache_control !== undefined)) {
    body.messages = raw.messages.map((m: Body) => {
      if (m.cache_control === undefined) return m;
      const { cache_control: _dropped, ...rest } = m;
      return rest;
    });
  }
  // The reserved bound must hold upstream too, or the charge could outgrow the hold.
  if (ceilingOf(raw) === null) body.max_completion_tokens = Math.min(DEFAULT_CEILING, maxOutputTokens ?? DEFAULT_CEILING);
  // Settlement needs the supplier's usage even when the caller did not ask for it.
  if (decoded.stream) body.stream_options = { include_usage: true };
  return JSON.stringify(body);
}

const FINISH_REASONS = new Set(['stop', 'length', 'tool_calls', 'content_filter']);

export function normalizeFinish(reason: unknown): string | null {
  if (reason === null || reason === undefined) return null;
  if (reason === 'function_call') return 'tool_calls';
  return FINISH_REASONS.has(reason as string) ? (reason as string) : 'stop';
}

function unary(upstream: unknown, call: CallInfo): UnaryResult {
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
  const created = typeof reply.created === 'number' ? reply.created : call.created;
  return {
    metered: reply.usage ? meteredFromUsage(reply.usage) : null,
    outcome: cut ? 'incomplete' : 'completed',
    producedText: produced,
    render: (settled: Metered) =>
      JSON.stringify({ choices, created, id: call.requestId, model: call.model, object: 'chat.completion', usage: usageObject(settled) }),
  };
}

function inputText(raw: Body): string {
  let text = '';
  for (const m of raw.messages as Body[]) {
    if (typeof m.content === 'string') text += m.content + '\n';
    else if (Array.isArray(m.content)) for (const part of m.content) if (typeof part.text === 'string') text += part.text + '\n';
    for (const tc of m.tool_calls ?? []) text += (tc.function?.arguments ?? '') + '\n';
  }
  for (const t of raw.tools ?? []) text += JSON.stringify(t.function) + '\n';
  return text;
}

export const chatCodec: SurfaceCodec = {
  protocol: 'chat_completions',
  path: '/v1/chat/completions',
  envelope: 'openai',
  carrier: 'bearer',
  modality: 'text_generation',
  decode,
  upstreamBody,
  inputText,
  unary,
  stream: (call, body) => new ChatStream(call, body.stream_options?.include_usage === true),
};
