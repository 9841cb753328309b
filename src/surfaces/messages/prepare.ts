// Messages request: validation and preparation, a pure function of the body,
// run inline for small bodies and in the worker-thread pool for large ones
// (workers/prepare-request.ts through the registry, surfaces/index.ts).
import type { BoundRequest } from '../../billing/types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { membersText } from '../members.js';
import type { Prepared } from '../surface.js';
import { assertValid, compile } from '../validate.js';
import { contentText, systemText, toolText, type MediaCount } from './content.js';
import { messagesRequestSchema } from './schema.js';

const validate = compile(messagesRequestSchema);

type Body = Record<string, any>;

/**
 * Checks what the schema cannot: tool names are unique, and tool_choice
 * names a declared tool exactly when its type is `tool`. Shared with
 * count_tokens, which accepts the same tools and tool_choice.
 */
export function checkTools(body: Body): void {
  const names = new Set<string>();
  const tools: Body[] = body.tools ?? [];
  for (let i = 0; i < tools.length; i++) {
    if (names.has(tools[i].name)) throw new GatewayError('invalid_request', { param: `tools[${i}].name`, message: `tools[${i}].name: another tool is declared under this name; each tool's name must be unique.` });
    names.add(tools[i].name);
  }
  const choice = body.tool_choice;
  if (choice === undefined) return;
  if (choice.type === 'tool') {
    if (choice.name === undefined || !names.has(choice.name)) throw new GatewayError('invalid_request', { param: 'tool_choice.name', message: 'tool_choice.name: must name a tool declared in tools.' });
  } else if (choice.name !== undefined) {
    throw new GatewayError('invalid_request', { param: 'tool_choice.name', message: 'tool_choice.name: is only accepted when tool_choice.type is "tool".' });
  }
  if (choice.type === 'none' && choice.disable_parallel_tool_use !== undefined) {
    throw new GatewayError('invalid_request', { param: 'tool_choice.disable_parallel_tool_use', message: 'tool_choice.disable_parallel_tool_use: is not accepted when tool_choice.type is "none".' });
  }
}

/**
 * The cheap input estimate, with no tokenizer: the body's bytes (a token
 * covers at least one byte) outside image and document payloads, plus those
 * blocks' stated figures. A tighter one (the text counted) is asked for only
 * when this one does not fit the funds (pipeline/admit.ts).
 */
function inputEstimate(body: Body, bodyBytes: number): { input: number; media: number } {
  const media: MediaCount = { tokens: 0, chars: 0 };
  for (const m of body.messages as Body[]) if (Array.isArray(m.content)) contentText(m.content, media);
  return { input: Math.max(0, bodyBytes - media.chars) + media.tokens, media: media.tokens };
}

export function prepareMessages(raw: unknown, bodyBytes: number): Prepared {
  assertValid(validate, raw);
  const body = raw as Body;
  checkTools(body);
  // What the gateway sets per route is left out of `rest`: the model and the
  // output bound (exactly one upstream, the reserved one). metadata,
  // thinking, output_config, context_management and service_tier are
  // accepted with no effect and not forwarded (spec; issue 31 for
  // service_tier). Everything else goes as sent.
  const {
    model: _model, max_tokens: maxTokens, metadata: _metadata, thinking: _thinking,
    output_config: _outputConfig, context_management: _contextManagement, service_tier: _tier, ...rest
  } = body;
  const { input, media } = inputEstimate(body, bodyBytes);
  const bound: BoundRequest = {
    inputTokens: input,
    mediaTokens: media,
    // The system prompt is not a turn, but the model reads it with the same framing.
    turns: body.messages.length + (body.system !== undefined ? 1 : 0),
    statedCeiling: maxTokens,
    ceilingParam: 'max_tokens',
    // No default on this surface: max_tokens is required.
    defaultCeiling: maxTokens,
    choices: 1,
    imageUnits: 0,
  };
  return { decoded: { model: body.model, stream: body.stream === true, bound }, rest: JSON.stringify(rest), meta: {} };
}

/** Members messagesInputText counts as text above, and those no supplier reads as prompt. */
const COUNTED_ELSEWHERE = ['system', 'messages', 'tools', 'stream', 'temperature', 'top_k', 'top_p'];

/** The request's text, for a local input count (a tighter reservation, or settlement without supplier usage). */
export function messagesInputText(prepared: Prepared): string {
  const body = JSON.parse(prepared.rest) as Body;
  const media: MediaCount = { tokens: 0, chars: 0 };
  let text = systemText(body.system);
  for (const m of body.messages as Body[]) text += '\n' + contentText(m.content, media);
  for (const t of (body.tools ?? []) as Body[]) text += '\n' + toolText(t);
  // Anything else forwarded the model reads (stop_sequences, tool_choice): counted too (issue 30 item 2).
  return text + '\n' + membersText(body, COUNTED_ELSEWHERE);
}
