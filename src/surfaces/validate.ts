// ajv, compiled once per surface at start. A schema violation becomes one
// invalid_request refusal naming the member at fault (`param`) and, in its
// message, the member and the rule it broke (a schema's `x-rule` where the
// rule needs a reason, ajv's wording of the keyword otherwise), in the
// surface's own envelope. Clients such as the AI SDK show only the message.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { GatewayError } from '../errors/gateway-error.js';

// verbose: an error carries the schema it broke, so its `x-rule` can be read.
const ajv = new Ajv({ allErrors: false, strict: false, verbose: true });

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

/** The rule a member broke, in words. */
function ruleOf(e: ErrorObject): string {
  const stated = (e.parentSchema as Record<string, unknown> | undefined)?.['x-rule'];
  if (typeof stated === 'string') return stated;
  switch (e.keyword) {
    case 'additionalProperties':
      return 'is not a member this surface accepts (docs/api lists them)';
    case 'required':
      return 'is required';
    case 'enum':
      return `must be one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'const':
      return `must be ${JSON.stringify(e.params.allowedValue)}`;
    default:
      return e.message ?? 'has a value outside what it accepts';
  }
}

/** "`member` rule." naming the member at fault; the body itself when no member is. */
export function refusalMessage(e: ErrorObject): string {
  const param = paramOf(e);
  return `${param === '' ? 'The request body' : '`' + param + '`'} ${ruleOf(e)}.`;
}

export function assertValid(validate: ValidateFunction, body: unknown): void {
  if (!validate(body)) {
    const e = validate.errors![0]!;
    throw new GatewayError('invalid_request', { param: paramOf(e) || undefined, message: refusalMessage(e) });
  }
}
