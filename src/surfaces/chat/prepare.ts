// Chat completions request: validation and preparation, a pure function of
// the body, run inline for small bodies and in the worker-thread pool for
// large ones (workers/prepare-request.ts).
import { GatewayError } from '../../errors/gateway-error.js';
import type { Prepared } from '../surface.js';
import { assertValid, compile } from '../validate.js';
import { chatRequestSchema } from './schema.js';

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

export function prepareChat(raw: unknown, bodyBytes: number): Prepared {
  assertValid(validate, raw);
  const body = raw as Body;
  const ceiling = ceilingOf(body);
  if (body.tool_choice !== undefined && typeof body.tool_choice === 'object') {
    const name = body.tool_choice.function.name;
    if (!(body.tools ?? []).some((t: Body) => t.function.name === name)) throw new GatewayError('invalid_request', { param: 'tool_choice' });
  }
  const stream = body.stream === true;
  // What the gateway sets per route is left out of `rest`: the model, and the
  // stream options (settlement needs the supplier's usage, so a stream always
  // asks for it). reasoning_effort is accepted and not carried (spec).
  const { model: _model, reasoning_effort: _effort, stream_options: streamOptions, ...rest } = body;
  if (body.messages.some((m: Body) => m.cache_control !== undefined)) {
    // cache_control is accepted and not carried (spec).
    rest.messages = body.messages.map((m: Body) => {
      if (m.cache_control === undefined) return m;
      const { cache_control: _dropped, ...kept } = m;
      return kept;
    });
  }
  return {
    decoded: { model: body.model, stream, bound: { inputTokens: bodyBytes, outputTokens: (ceiling ?? DEFAULT_CEILING) * (body.n ?? 1), imageUnits: 0 } },
    rest: JSON.stringify(rest),
    meta: { ceilingStated: ceiling !== null, includeUsage: streamOptions?.include_usage === true },
  };
}

/** The request's text, for a local input count (only when a supplier reported no usage). */
export function chatInputText(prepared: Prepared): string {
  const body = JSON.parse(prepared.rest) as Body;
  let text = '';
  for (const m of body.messages as Body[]) {
    if (typeof m.content === 'string') text += m.content + '\n';
    else if (Array.isArray(m.content)) for (const part of m.content) if (typeof part.text === 'string') text += part.text + '\n';
    for (const tc of m.tool_calls ?? []) text += (tc.function?.arguments ?? '') + '\n';
  }
  for (const t of body.tools ?? []) text += JSON.stringify(t.function) + '\n';
  return text;
}
