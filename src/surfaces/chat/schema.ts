// POST /v1/chat/completions request, per the spec's member table. Top-level
// members outside the table are refused by name; message objects are open,
// because clients replay the assistant messages they were given. Every
// integer member goes through integer() (a safe maximum, refused by name).
import { integer } from '../validate.js';

/** Completions one request may ask for (OpenAI's limit). */
export const MAX_CHOICES = 128;

const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });

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
    stop: nullable({ type: 'array', maxItems: 4, items: { type: 'string' } }),
    stream: nullable({ type: 'boolean' }),
    stream_options: nullable({ type: 'object', additionalProperties: false, properties: { include_usage: { type: 'boolean' } } }),
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
    user: nullable({ type: 'string' }),
  },
} as const;
