// ajv, compiled once per surface at start. A schema violation becomes one
// invalid_request refusal naming the member at fault (`param`), in the
// surface's own envelope.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { GatewayError } from '../errors/gateway-error.js';

const ajv = new Ajv({ allErrors: false, strict: false });

/**
 * An integer member a caller sends. JSON numbers such as 1e308 are integers
 * to ajv; above 2^53 − 1 they are not exact, and arithmetic on them (a bound
 * × n) reaches Infinity. So every integer member has a safe maximum, and a
 * larger value is refused naming the member.
 */
export function integer(minimum: number, maximum: number = Number.MAX_SAFE_INTEGER): { type: 'integer'; minimum: number; maximum: number } {
  return { type: 'integer', minimum, maximum: Math.min(maximum, Number.MAX_SAFE_INTEGER) };
}

export function compile(schema: object): ValidateFunction {
  return ajv.compile(schema);
}

/** '/messages/0/role' → 'messages[0].role' */
function paramOf(e: ErrorObject): string {
  const parts = e.instancePath.split('/').slice(1);
  if (e.keyword === 'required') parts.push(String(e.params.missingProperty));
  if (e.keyword === 'additionalProperties') parts.push(String(e.params.additionalProperty));
  let out = '';
  for (const p of parts) out += /^\d+$/.test(p) ? `[${p}]` : out === '' ? p : `.${p}`;
  return out;
}

export function assertValid(validate: ValidateFunction, body: unknown): void {
  if (!validate(body)) {
    const e = validate.errors![0];
    throw new GatewayError('invalid_request', { param: paramOf(e) || undefined });
  }
}
