// POST /v1/messages/count_tokens request: the members of /v1/messages that
// describe the input, in the same shapes. Anything else is refused by name —
// in particular the generation-only members (max_tokens, stream,
// output_config, stop_sequences, temperature, top_p, top_k), which a count
// has no use for (spec, count_tokens rule 3).
import { ignoredMembers, messagesMember, systemMember, toolChoiceMember, toolsMember } from '../messages/schema.js';

export const countTokensRequestSchema = {
  type: 'object',
  required: ['messages', 'model'],
  additionalProperties: false,
  properties: {
    model: { type: 'string', minLength: 1 },
    messages: messagesMember,
    system: systemMember,
    tools: toolsMember,
    tool_choice: toolChoiceMember,
    thinking: ignoredMembers.thinking,
    metadata: ignoredMembers.metadata,
    context_management: ignoredMembers.context_management,
  },
} as const;
