// POST /v1/chat/completions request: the spec's member table and the
// members of OpenAI's current API clients send (issue 31; which are carried
// and which are not: prepare.ts and docs/api/chat-completions.md). Other
// top-level members are refused by name; message objects are open, because
// clients replay the assistant messages they were given. Every integer
// member goes through integer() (a safe maximum, refused by name).
import { identifier, metadata, nullable, onlyFalse, penalty, refusedBecause, serviceTier, topLogprobs } from '../members.js';
import { integer } from '../validate.js';

/** Completions one request may ask for (OpenAI's limit). */
export const MAX_CHOICES = 128;

export const chatRequestSchema = {
  type: 'object',
  required: ['messages', 'model'],
  additionalProperties: false,
  properties: {
    messages: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['role'],
        properties: {
          role: { enum: ['system', 'developer', 'user', 'assistant', 'tool'] },
          content: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }, { type: 'null' }] },
          name: { type: 'string' },
          tool_call_id: { type: 'string' },
          tool_calls: { type: 'array', items: { type: 'object' } },
          cache_control: { type: 'object' },
        },
      },
    },
    model: { type: 'string', minLength: 1 },
    max_tokens: nullable(integer(1)),
    max_completion_tokens: nullable(integer(1)),
    // OpenAI's own limit on completions per request.
    n: nullable(integer(1, MAX_CHOICES)),
    reasoning_effort: nullable({ type: 'string' }),
    response_format: {
      type: 'object',
      required: ['type'],
      properties: { type: { type: 'string' }, json_schema: { type: 'object' } },
    },
    // A bare string is refused (spec): only an array of at most four.
    stop: nullable({ type: 'array', maxItems: 4, items: { type: 'string' }, 'x-rule': 'must be an array of at most four strings (a bare string is refused)' }),
    stream: nullable({ type: 'boolean' }),
    stream_options: nullable({ type: 'object', additionalProperties: false, properties: { include_usage: { type: 'boolean' }, include_obfuscation: { type: 'boolean' } } }),
    temperature: nullable({ type: 'number', minimum: 0, maximum: 2 }),
    tool_choice: {
      anyOf: [
        { enum: ['auto', 'none', 'required'] },
        {
          type: 'object',
          required: ['type', 'function'],
          properties: { type: { const: 'function' }, function: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } },
        },
      ],
    },
    tools: {
      type: 'array',
      items: {
        type: 'object',
        required: ['type', 'function'],
        properties: {
          type: { const: 'function' },
          function: { type: 'object', required: ['name'], properties: { name: { type: 'string', minLength: 1 }, parameters: { type: 'object' } } },
        },
      },
    },
    top_p: nullable({ type: 'number', minimum: 0, maximum: 1 }),
    user: identifier,
    // Carried (prepare.ts).
    parallel_tool_calls: nullable({ type: 'boolean' }),
    seed: nullable(integer(-Number.MAX_SAFE_INTEGER)),
    presence_penalty: penalty,
    frequency_penalty: penalty,
    logit_bias: nullable({
      type: 'object',
      maxProperties: 300,
      propertyNames: { pattern: '^[0-9]{1,9}$' },
      additionalProperties: { type: 'number', minimum: -100, maximum: 100 },
    }),
    safety_identifier: identifier,
    // Accepted and not carried (prepare.ts says why).
    logprobs: nullable({ type: 'boolean' }),
    top_logprobs: topLogprobs,
    metadata,
    store: onlyFalse,
    service_tier: serviceTier,
    prompt_cache_key: identifier,
    verbosity: nullable({ enum: ['low', 'medium', 'high'] }),
    // Text is the one output modality here: "audio" is refused by name.
    modalities: nullable({ type: 'array', maxItems: 1, items: { const: 'text' }, 'x-rule': 'may only be ["text"]: no model served here answers audio' }),
    prediction: nullable({
      type: 'object',
      required: ['type', 'content'],
      properties: { type: { const: 'content' }, content: { type: ['string', 'array'] } },
    }),
    // Refused by name, each for the promise carrying it would break (docs/api/chat-completions.md).
    audio: refusedBecause('no model served here answers audio'),
    // The supplier bills each search beside the tokens; the catalog prices tokens only.
    web_search_options: refusedBecause('the supplier bills each web search beside the tokens, and Tollgate prices and charges tokens only'),
    // The deprecated forms of tools and tool_choice: their reply (message.function_call,
    // finish_reason "function_call") and answer turn (role "function") are not the
    // tool exchange the gateway carries.
    functions: refusedBecause('it is the deprecated form of `tools`: declare each function as {"type": "function", "function": {…}} in `tools`'),
    function_call: refusedBecause('it is the deprecated form of `tool_choice`: use `tool_choice` with functions declared in `tools`'),
  },
} as const;
