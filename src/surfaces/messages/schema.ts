// POST /v1/messages request, per the spec's member table. Top-level members
// outside the table are refused by name; content blocks are open objects
// (clients replay the blocks they were given), except that a replayed
// tool_use carries an `input` object and a tool_result names its call.
// The pieces shared with count_tokens (messages, system, tools, tool_choice
// and the accepted-but-ignored members) are exported for its schema.
import { integer } from '../validate.js';

const contentBlock = {
  type: 'object',
  required: ['type'],
  properties: { type: { type: 'string', minLength: 1 } },
  allOf: [
    { if: { required: ['type'], properties: { type: { const: 'text' } } }, then: { required: ['text'], properties: { text: { type: 'string' } } } },
    {
      if: { required: ['type'], properties: { type: { const: 'tool_use' } } },
      then: { required: ['id', 'name', 'input'], properties: { id: { type: 'string' }, name: { type: 'string' }, input: { type: 'object' } } },
    },
    { if: { required: ['type'], properties: { type: { const: 'tool_result' } } }, then: { required: ['tool_use_id'], properties: { tool_use_id: { type: 'string' } } } },
  ],
} as const;

export const messagesMember = {
  type: 'array',
  minItems: 1,
  items: {
    type: 'object',
    required: ['role', 'content'],
    properties: {
      role: { enum: ['user', 'assistant', 'system'] },
      // A type list, not anyOf, so a refusal names the block member at fault.
      content: { type: ['string', 'array'], items: contentBlock },
    },
  },
} as const;

/** The system prompt: a string or text blocks; not a turn. */
export const systemMember = {
  type: ['string', 'array'],
  items: {
    type: 'object',
    required: ['type', 'text'],
    additionalProperties: false,
    properties: { type: { const: 'text' }, text: { type: 'string' }, cache_control: { type: 'object' } },
  },
} as const;

export const toolsMember = {
  type: 'array',
  items: {
    type: 'object',
    required: ['name'],
    additionalProperties: false,
    properties: {
      name: { type: 'string', minLength: 1 },
      description: { type: 'string' },
      type: { type: 'string' },
      input_schema: { type: 'object' },
      cache_control: { type: 'object' },
      allowed_callers: { type: 'array', items: { type: 'string' } },
      defer_loading: { type: 'boolean' },
      eager_input_streaming: { type: 'boolean' },
      input_examples: { type: 'array', items: { type: 'object' } },
      max_uses: integer(1),
      strict: { type: 'boolean' },
    },
  },
} as const;

/** `name` only with type `tool` (checked against `tools` in prepare); none takes no options. */
export const toolChoiceMember = {
  type: 'object',
  required: ['type'],
  additionalProperties: false,
  properties: {
    type: { enum: ['auto', 'any', 'tool', 'none'] },
    name: { type: 'string', minLength: 1 },
    disable_parallel_tool_use: { type: 'boolean' },
  },
} as const;

/** Accepted with no effect and never forwarded (spec). */
export const ignoredMembers = {
  metadata: { type: 'object', additionalProperties: false, properties: { user_id: { type: ['string', 'null'] } } },
  thinking: { type: 'object' },
  output_config: { type: 'object' },
  context_management: { type: 'object' },
  // The vendor's capacity tier: a priority tier costs the operator more than the catalog's price.
  service_tier: { enum: ['auto', 'standard_only'] },
} as const;

export const messagesRequestSchema = {
  type: 'object',
  required: ['max_tokens', 'messages', 'model'],
  additionalProperties: false,
  properties: {
    // Required, no default: the bound reserved is exactly the caller's (within the model's max_output_tokens).
    max_tokens: integer(1),
    messages: messagesMember,
    model: { type: 'string', minLength: 1 },
    system: systemMember,
    stop_sequences: { type: 'array', items: { type: 'string' } },
    stream: { type: 'boolean' },
    temperature: { type: 'number', minimum: 0, maximum: 1 },
    top_k: integer(0),
    top_p: { type: 'number', minimum: 0, maximum: 1 },
    tool_choice: toolChoiceMember,
    tools: toolsMember,
    ...ignoredMembers,
  },
} as const;
