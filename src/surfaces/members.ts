// Members several OpenAI-protocol surfaces accept, each bounded before use
// (docs/api/*.md list, per surface, which are carried, which accepted and not
// carried, and which refused, and why). Shared so the bounds are stated once.
// The rule (issue 31): a member of the protocol's current public API is
// accepted; it is refused by name only where carrying it would break a
// promise (store or background true: the gateway keeps nothing).
import { integer } from './validate.js';

export const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });

/** OpenAI's metadata: at most 16 string pairs, keys up to 64 characters, values up to 512. */
export const metadata = nullable({
  type: 'object',
  maxProperties: 16,
  propertyNames: { maxLength: 64 },
  additionalProperties: { type: 'string', maxLength: 512 },
});

/** An end-user or cache identifier a client passes along (user, safety_identifier, prompt_cache_key). */
export const identifier = nullable({ type: 'string', maxLength: 512 });

/** The vendor's processing tier: accepted, never carried (a faster tier costs the operator more than the catalog's price). */
export const serviceTier = nullable({ enum: ['auto', 'default', 'flex', 'scale', 'priority'] });

/** Only false: the gateway keeps nothing and asks its suppliers to keep nothing; true is refused by name. */
export const onlyFalse = nullable({ const: false, 'x-rule': 'must be false: Tollgate keeps nothing, runs nothing after the call, and asks its suppliers to keep nothing' });

/**
 * A member of the protocol's current API refused by name, with the promise
 * carrying it would break (docs/api says the same per surface): the
 * refusal's message is "`member` is not accepted: <why>."
 */
export const refusedBecause = (why: string) => ({ not: {}, 'x-rule': `is not accepted: ${why}` });

/** Alternatives per output token a client may ask for (OpenAI's range). */
export const topLogprobs = nullable(integer(0, 20));

/** A sampling penalty (OpenAI's range). */
export const penalty = nullable({ type: 'number', minimum: -2, maximum: 2 });

/** The JSON of every member of an upstream body but those `counted` as text: what a supplier tokenizes beside the turns (tools, schemas, stop sequences …). */
export function membersText(body: Record<string, unknown>, counted: readonly string[]): string {
  let text = '';
  for (const key of Object.keys(body)) if (!counted.includes(key)) text += key + ':' + JSON.stringify(body[key]) + '\n';
  return text;
}
