// piscina task: parse and decode a large body of a local operation
// (count_tokens) off the event loop, then run the operation's inPool step on
// the decoded data in the same thread (count_tokens: its o200k count), so
// only a small result crosses back. The HTTP worker hands over the raw bytes
// (transferred, not copied). Measured by bench/micro/count-tokens.ts.
import { GatewayError } from '../src/errors/gateway-error.js';
import { nestingFault } from '../src/server/json-depth.js';
import type { DecodeResult } from '../src/surfaces/local-operation.js';
import { localOperationNamed } from '../src/surfaces/index.js';
import countTokens from './count-tokens.js';
import './thread-priority.js';

export interface DecodeTask {
  /** The operation's registry name (src/surfaces/index.ts). */
  operation: string;
  body: Uint8Array;
  /** http.max_json_depth: a deeper body is refused before it is parsed (parse recurses). */
  maxDepth: number;
}

const decoder = new TextDecoder();

export default async function decodeLocal(task: DecodeTask): Promise<DecodeResult<unknown>> {
  const op = localOperationNamed(task.operation);
  const fault = nestingFault(task.body, task.maxDepth);
  if (fault !== null) return { ok: false, code: 'nesting_too_deep', param: fault === '' ? null : fault };
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(task.body));
  } catch {
    return { ok: false, code: 'invalid_json', param: null };
  }
  let decoded: unknown;
  try {
    decoded = op.decode(parsed, task.body.byteLength);
  } catch (err) {
    if (err instanceof GatewayError && err.code === 'invalid_request') return { ok: false, code: 'invalid_request', param: err.param, message: err.message };
    throw err;
  }
  return { ok: true, decoded: op.inPool === undefined ? decoded : await op.inPool(decoded, countTokens) };
}
