// Chat completions request: validation and preparation, a pure function of
// the body, run inline for small bodies and in the worker-thread pool for
// large ones (workers/prepare-request.ts).
import type { BoundRequest } from '../../billing/types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { membersText } from '../members.js';
import type { Prepared } from '../surface.js';
import { assertValid, compile } from '../validate.js';
import { addMedia, type MediaEstimate } from './media.js';
import { chatRequestSchema } from './schema.js';

/** Carried members a client may send as null: left out (as absent), since some suppliers refuse a null. */
const NULLABLE_CARRIED = ['parallel_tool_calls', 'seed', 'presence_penalty', 'frequency_penalty', 'logit_bias', 'safety_identifier'];

/** Members chatInputText counts as text, and those no supplier reads as prompt (numbers, switches, identifiers). */
const COUNTED_AS_TEXT = [
  'messages', 'stream', 'n', 'seed', 'temperature', 'top_p', 'presence_penalty', 'frequency_penalty',
  'parallel_tool_calls', 'logit_bias', 'user', 'safety_identifier',
];

/** Spec, chat rule 1: the ceiling when neither max_tokens nor max_completion_tokens is stated. */
export const DEFAULT_CEILING = 32768;

const validate = compile(chatRequestSchema);

type Body = Record<string, any>;

/** The stated ceiling and the member that states it; `max_completion_tokens` when neither is (the default is sent under it). */
function ceilingOf(body: Body): { ceiling: number | null; param: string } {
  const a = body.max_tokens ?? null;
  const b = body.max_completion_tokens ?? null;
  if (a !== null && b !== null && a !== b) throw new GatewayError('invalid_request', { param: 'max_completion_tokens' });
  // The caller's spelling is kept upstream (some suppliers know only one of them); both stated: the current one.
  return b === null && a !== null ? { ceiling: a, param: 'max_tokens' } : { ceiling: b, param: 'max_completion_tokens' };
}

/**
 * The cheap input estimate, with no tokenizer: the body's bytes (a token
 * covers at least one byte) outside image and file payloads, plus those
 * parts' own token estimates. A tighter one is counted only when this one
 * does not fit the funds (pipeline/admit.ts).
 */
function inputEstimate(messages: Body[], bodyBytes: number): { input: number; media: number } {
  const media: MediaEstimate = { tokens: 0, chars: 0 };
  for (const m of messages) if (Array.isArray(m.content)) addMedia(m.content, media);
  return { input: bodyBytes - media.chars + media.tokens, media: media.tokens };
}

export function prepareChat(raw: unknown, bodyBytes: number): Prepared {
  assertValid(validate, raw);
  const body = raw as Body;
  const { ceiling, param } = ceilingOf(body);
  if (body.tool_choice !== undefined && typeof body.tool_choice === 'object') {
    const name = body.tool_choice.function.name;
    if (!(body.tools ?? []).some((t: Body) => t.function.name === name)) throw new GatewayError('invalid_request', { param: 'tool_choice' });
  }
  const stream = body.stream === true;
  // What the gateway sets per route is left out of `rest`: the model, the
  // output bound (the upstream body carries exactly one, the reserved one,
  // never a caller's null beside it), and the stream options (settlement
  // needs the supplier's usage, so a stream always asks for it).
  // Accepted and not carried: reasoning_effort and verbosity (spec: they
  // steer reasoning models only, and other suppliers refuse them); logprobs
  // and top_logprobs (the gateway's reply carries no logprobs); metadata and
  // store (false: nothing is stored, nothing to tag); service_tier (a faster
  // tier costs the operator more than the catalog's price); prompt_cache_key
  // (the vendor's cache routing); modalities (text only, the default);
  // prediction (rejected predicted tokens are billed as output beyond the
  // reserved bound).
  const {
    model: _model, reasoning_effort: _effort, stream_options: streamOptions,
    max_tokens: _maxTokens, max_completion_tokens: _maxCompletionTokens,
    verbosity: _verbosity, logprobs: _logprobs, top_logprobs: _topLogprobs, metadata: _metadata, store: _store,
    service_tier: _tier, prompt_cache_key: _cacheKey, modalities: _modalities, prediction: _prediction, ...rest
  } = body;
  // OpenAI refuses parallel_tool_calls without tools: carried only beside them.
  if (body.tools === undefined || body.tools === null || body.tools.length === 0) delete rest.parallel_tool_calls;
  for (const member of NULLABLE_CARRIED) if (rest[member] === null) delete rest[member];
  if (body.messages.some((m: Body) => m.cache_control !== undefined)) {
    // cache_control is accepted and not carried (spec).
    rest.messages = body.messages.map((m: Body) => {
      if (m.cache_control === undefined) return m;
      const { cache_control: _dropped, ...kept } = m;
      return kept;
    });
  }
  const { input, media } = inputEstimate(body.messages, bodyBytes);
  const bound: BoundRequest = {
    inputTokens: input,
    mediaTokens: media,
    turns: body.messages.length,
    statedCeiling: ceiling,
    ceilingParam: param,
    defaultCeiling: DEFAULT_CEILING,
    choices: body.n ?? 1,
    imageUnits: 0,
  };
  return {
    decoded: { model: body.model, stream, bound },
    rest: JSON.stringify(rest),
    meta: { includeUsage: streamOptions?.include_usage === true },
  };
}

/**
 * The request's text, for a local input count (a tighter reservation, or
 * settlement when a supplier reported no usage): the turns' text and the
 * JSON of every other member forwarded (tools, response_format's schema,
 * stop, …), since the supplier reads and bills all of it (issue 30 item 2).
 */
export function chatInputText(prepared: Prepared): string {
  const body = JSON.parse(prepared.rest) as Body;
  let text = '';
  for (const m of body.messages as Body[]) {
    if (typeof m.content === 'string') text += m.content + '\n';
    else if (Array.isArray(m.content)) for (const part of m.content) if (typeof part.text === 'string') text += part.text + '\n';
    for (const tc of m.tool_calls ?? []) text += (tc.function?.arguments ?? '') + '\n';
  }
  return text + membersText(body, COUNTED_AS_TEXT);
}

