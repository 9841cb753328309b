// POST /v1/responses request, per the spec's member table. Top-level members
// outside the table are refused by name, and so are members of an input item
// or a tool outside the spec's lists (every member a client replays from an
// output item is in them). Content parts are open objects: clients replay the
// parts they were given. Every integer member goes through integer().
import { identifier, metadata, nullable, onlyFalse, refusedBecause, serviceTier, topLogprobs } from '../members.js';
import { integer } from '../validate.js';

const ITEM_TYPES = [
  'message', 'function_call', 'function_call_output', 'additional_tools',
  'custom_tool_call', 'custom_tool_call_output', 'reasoning', 'web_search_call',
] as const;

const part = { type: 'object', required: ['type'], properties: { type: { type: 'string', minLength: 1 } } } as const;
const textPart = (kind: string) => ({
  type: 'object',
  required: ['type', 'text'],
  properties: { type: { const: kind }, text: { type: 'string' } },
});

/** What an item of `type` must carry to mean anything to a supplier. */
const requiredByType: Record<string, string[]> = {
  function_call: ['call_id', 'name', 'arguments'],
  function_call_output: ['call_id', 'output'],
  custom_tool_call: ['call_id', 'name', 'input'],
  custom_tool_call_output: ['call_id', 'output'],
  additional_tools: ['tools'],
};

export const inputItem = {
  type: 'object',
  additionalProperties: false,
  properties: {
    type: { enum: ITEM_TYPES },
    role: { enum: ['system', 'user', 'developer', 'assistant'] },
    // A type list, not anyOf, so a refusal names the part member at fault.
    content: { type: ['string', 'array'], items: part },
    output: { type: ['string', 'array'], items: textPart('input_text') },
    summary: { type: 'array', items: textPart('summary_text') },
    arguments: { type: 'string' },
    call_id: { type: 'string', minLength: 1 },
    encrypted_content: { type: 'string' },
    id: { type: 'string' },
    input: { type: 'string' },
    name: { type: 'string', minLength: 1 },
    namespace: { type: 'string' },
    status: { type: 'string' },
    action: { type: 'object' },
    tools: { type: 'array', items: { type: 'object' } },
  },
  allOf: [
    // A message (typed, or a bare {role, content}) states both.
    {
      if: { anyOf: [{ required: ['type'], properties: { type: { const: 'message' } } }, { not: { required: ['type'] } }] },
      then: { required: ['role', 'content'] },
    },
    ...Object.entries(requiredByType).map(([type, required]) => ({
      if: { required: ['type'], properties: { type: { const: type } } },
      then: { required },
    })),
  ],
} as const;

export const tool = {
  type: 'object',
  required: ['type'],
  additionalProperties: false,
  properties: {
    type: { enum: ['function', 'custom', 'tool_search', 'web_search'] },
    name: { type: 'string', minLength: 1 },
    description: { type: 'string' },
    parameters: nullable({ type: 'object' }),
    strict: nullable({ type: 'boolean' }),
    execution: { enum: ['client', 'server'] },
    format: { type: 'object' },
    external_web_access: { type: 'boolean' },
    filters: nullable({ type: 'object' }),
    search_content_types: { type: 'array', items: { type: 'string' } },
    search_context_size: { type: 'string' },
    user_location: nullable({ type: 'object' }),
  },
  allOf: [
    // A function or a custom tool is called by its name.
    { if: { properties: { type: { enum: ['function', 'custom'] } } }, then: { required: ['name'] } },
    { if: { properties: { type: { not: { const: 'tool_search' } } } }, then: { not: { required: ['execution'] } } },
  ],
} as const;

/** A mode word, or an object naming one declared tool (checked against `tools` in prepare). */
export const toolChoice = {
  anyOf: [
    { enum: ['auto', 'none', 'required'] },
    {
      type: 'object',
      required: ['type', 'name'],
      additionalProperties: false,
      properties: { type: { enum: ['function', 'custom', 'tool_search', 'web_search'] }, name: { type: 'string', minLength: 1 } },
    },
  ],
} as const;

export const responsesRequestSchema = {
  type: 'object',
  required: ['input', 'model'],
  additionalProperties: false,
  properties: {
    input: { type: ['string', 'array'], minLength: 1, minItems: 1, items: inputItem },
    model: { type: 'string', minLength: 1 },
    instructions: nullable({ type: 'string' }),
    // An explicit 0 is refused by name (spec); absent or null: the default 32768.
    max_output_tokens: nullable(integer(1)),
    // Only false: the gateway keeps no response (spec).
    store: onlyFalse,
    previous_response_id: nullable({ type: 'string', minLength: 1, maxLength: 256 }),
    stream: nullable({ type: 'boolean' }),
    text: {
      type: 'object',
      additionalProperties: false,
      properties: {
        format: { type: 'object', required: ['type'], properties: { type: { type: 'string' } } },
        verbosity: nullable({ enum: ['low', 'medium', 'high'] }),
      },
    },
    tool_choice: toolChoice,
    tools: { type: 'array', items: tool },
    include: nullable({ type: 'array', items: { type: 'string' } }),
    // Accepted with no effect, never forwarded (spec).
    parallel_tool_calls: nullable({ type: 'boolean' }),
    reasoning: nullable({ type: 'object' }),
    prompt_cache_key: identifier,
    client_metadata: nullable({ type: 'object' }),
    // Members of OpenAI's current API clients send (issue 31). Carried:
    temperature: nullable({ type: 'number', minimum: 0, maximum: 2 }),
    top_p: nullable({ type: 'number', minimum: 0, maximum: 1 }),
    user: identifier,
    safety_identifier: identifier,
    truncation: nullable({ enum: ['auto', 'disabled'] }),
    max_tool_calls: nullable(integer(1, 1024)),
    // Accepted and not carried (prepare.ts says why); background true is refused by name.
    metadata,
    service_tier: serviceTier,
    top_logprobs: topLogprobs,
    background: onlyFalse,
    stream_options: nullable({ type: 'object', additionalProperties: false, properties: { include_obfuscation: { type: 'boolean' } } }),
    // Refused by name, each for the promise carrying it would break (docs/api/responses.md):
    // both name something stored in the supplier account every organization's calls share,
    // and put text before the model that the gateway never sees, so can neither bound nor count.
    conversation: refusedBecause('it names a conversation stored in the supplier account every organization shares, and Tollgate keeps no conversation; send the context in `input`'),
    prompt: refusedBecause('it names a prompt stored in the supplier account every organization shares, whose text Tollgate cannot see, bound or charge; send the text as `instructions` or `input`'),
  },
} as const;
