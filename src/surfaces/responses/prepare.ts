// Responses request: validation and preparation, a pure function of the body,
// run inline for small bodies and in the worker-thread pool for large ones
// (workers/prepare-request.ts through the registry, surfaces/index.ts).
import type { BoundRequest } from '../../billing/types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { FILE_PART_TOKENS, IMAGE_BASE_TOKENS, IMAGE_HIGH_MAX_TOKENS } from '../chat/media.js';
import { membersText } from '../members.js';
import type { Prepared } from '../surface.js';
import { assertValid, compile } from '../validate.js';
import { responsesRequestSchema } from './schema.js';

/** Spec: the output ceiling when max_output_tokens is absent. */
export const DEFAULT_CEILING = 32768;
/** The one `include` value forwarded to the supplier; any other has no effect (spec). */
export const FORWARDED_INCLUDE = 'reasoning.encrypted_content';

const validate = compile(responsesRequestSchema);

type Body = Record<string, any>;

/** Tool names are unique among the tools that have one; an object tool_choice names one of them, of its type. */
function checkTools(body: Body): void {
  const declared = new Map<string, string>();
  const tools: Body[] = body.tools ?? [];
  for (let i = 0; i < tools.length; i++) {
    const name = tools[i]!.name;
    if (name === undefined) continue;
    if (declared.has(name)) throw new GatewayError('invalid_request', { param: `tools[${i}].name`, message: `tools[${i}].name: another tool is declared under this name; each tool's name must be unique.` });
    declared.set(name, tools[i]!.type);
  }
  const choice = body.tool_choice;
  if (choice !== null && typeof choice === 'object' && declared.get(choice.name) !== choice.type) {
    throw new GatewayError('invalid_request', { param: 'tool_choice.name', message: 'tool_choice.name: must name a tool declared in tools, of the type tool_choice states.' });
  }
}

/**
 * The turns sent upstream: `instructions` becomes the leading system turn, a
 * developer turn is carried as a system turn, everything else in order and
 * as stated. A bare string with neither stays a bare string (nothing to change).
 */
function upstreamInput(body: Body): unknown {
  const instructions = typeof body.instructions === 'string' ? body.instructions : null;
  const input = body.input;
  if (typeof input === 'string') {
    if (instructions === null) return input;
    return [systemTurn(instructions), { type: 'message', role: 'user', content: input }];
  }
  const items = (input as Body[]).map((item) => (item.role === 'developer' ? { ...item, role: 'system' } : item));
  if (instructions !== null) items.unshift(systemTurn(instructions));
  return items;
}

function systemTurn(text: string): Body {
  return { type: 'message', role: 'system', content: text };
}

/** Media parts whose bytes say nothing of their cost (chat's figures: docs/billing.md). */
function addMedia(content: unknown, media: { tokens: number; chars: number }): void {
  if (!Array.isArray(content)) return;
  for (const p of content as Body[]) {
    if (p.type === 'input_image') {
      media.tokens += p.detail === 'low' ? IMAGE_BASE_TOKENS : IMAGE_HIGH_MAX_TOKENS;
      if (typeof p.image_url === 'string') media.chars += p.image_url.length;
    } else if (p.type === 'input_file') {
      media.tokens += FILE_PART_TOKENS;
      if (typeof p.file_data === 'string') media.chars += p.file_data.length;
    }
  }
}

/**
 * The cheap input estimate, with no tokenizer: the body's bytes (a token
 * covers at least one byte) outside image and file payloads, plus those
 * parts' stated figures. A tighter one is counted only when this one does
 * not fit the funds (pipeline/admit.ts).
 */
function inputEstimate(body: Body, bodyBytes: number): { input: number; media: number } {
  const media = { tokens: 0, chars: 0 };
  if (Array.isArray(body.input)) for (const item of body.input as Body[]) addMedia(item.content, media);
  return { input: Math.max(0, bodyBytes - media.chars) + media.tokens, media: media.tokens };
}

export function prepareResponses(raw: unknown, bodyBytes: number): Prepared {
  assertValid(validate, raw);
  const body = raw as Body;
  checkTools(body);
  // Left out of `rest`: what the gateway sets per route (the model, the one
  // output bound, store false), what it turns into a turn (instructions),
  // what it checks itself and never sends (previous_response_id: ownership
  // only, never context), and the members accepted with no effect
  // (parallel_tool_calls, reasoning, prompt_cache_key, client_metadata,
  // text.verbosity, include values other than reasoning.encrypted_content;
  // metadata and background false: nothing is stored or run later;
  // service_tier: a faster tier costs the operator more than the catalog's
  // price; top_logprobs: the reply carries no logprobs; stream_options).
  const {
    model: _model, max_output_tokens: maxOutputTokens, store: _store, previous_response_id: previous,
    instructions: _instructions, input: _input, text, include, parallel_tool_calls: _parallel,
    reasoning: _reasoning, prompt_cache_key: _cacheKey, client_metadata: _clientMetadata,
    metadata: _metadata, service_tier: _tier, top_logprobs: _topLogprobs, background: _background,
    stream_options: _streamOptions, ...kept
  } = body;
  // A null is the member left out (some suppliers refuse a null).
  for (const member of Object.keys(kept)) if (kept[member] === null) delete kept[member];
  const rest: Body = { input: upstreamInput(body), ...kept };
  if (text?.format !== undefined) rest.text = { format: text.format };
  if (Array.isArray(include) && include.includes(FORWARDED_INCLUDE)) rest.include = [FORWARDED_INCLUDE];
  const { input, media } = inputEstimate(body, bodyBytes);
  const bound: BoundRequest = {
    inputTokens: input,
    mediaTokens: media,
    turns: (typeof body.input === 'string' ? 1 : body.input.length) + (typeof body.instructions === 'string' ? 1 : 0),
    statedCeiling: maxOutputTokens ?? null,
    ceilingParam: 'max_output_tokens',
    defaultCeiling: DEFAULT_CEILING,
    choices: 1,
    imageUnits: 0,
  };
  const meta: Prepared['meta'] = {};
  if (typeof previous === 'string') meta.previousResponseId = previous;
  return { decoded: { model: body.model, stream: body.stream === true, bound }, rest: JSON.stringify(rest), meta };
}

function partsText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const p of content as Body[]) if (typeof p.text === 'string') text += p.text + '\n';
  return text;
}

/** Members forwarded that no supplier reads as prompt (numbers, switches, identifiers). */
const NOT_PROMPT = ['input', 'stream', 'temperature', 'top_p', 'user', 'safety_identifier', 'truncation', 'max_tool_calls', 'include'];

/**
 * The request's text, for a local input count (a tighter reservation, or
 * settlement without supplier usage): the turns (instructions among them)
 * and the JSON of every other member forwarded (tools, text.format's
 * schema, …), since the supplier reads and bills all of it (issue 30 item 2).
 */
export function responsesInputText(prepared: Prepared): string {
  const body = JSON.parse(prepared.rest) as Body;
  return turnsText(body.input) + membersText(body, NOT_PROMPT);
}

function turnsText(input: string | Body[]): string {
  if (typeof input === 'string') return input + '\n';
  let text = '';
  for (const item of input) {
    text += partsText(item.content) + partsText(item.output) + partsText(item.summary);
    for (const member of ['name', 'arguments', 'input']) if (typeof item[member] === 'string') text += item[member] + '\n';
    if (item.type === 'additional_tools') text += JSON.stringify(item.tools) + '\n';
  }
  return text;
}
