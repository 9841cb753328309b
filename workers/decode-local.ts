// piscina task: parse and decode a large body of a local operation
// (count_tokens) off the event loop. The HTTP worker hands over the raw bytes
// (transferred, not copied) and gets back plain data: the decoded request or
// the refusal. Counting its tokens is a second task (count-tokens.ts), after
// the model and the key's scope have been checked on the event loop.
import { GatewayError } from '../src/errors/gateway-error.js';
import { LOCAL_DECODERS } from '../src/surfaces/preparers.js';
import type { DecodeResult } from '../src/surfaces/local-operation.js';

export interface DecodeTask {
  operation: string;
  body: Uint8Array;
}

const decoder = new TextDecoder();

export default function decodeLocal(task: DecodeTask): DecodeResult<unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(task.body));
  } catch {
    return { ok: false, code: 'invalid_json', param: null };
  }
  try {
    return { ok: true, decoded: LOCAL_DECODERS[task.operation]!(parsed, task.body.byteLength) };
  } catch (err) {
    if (err instanceof GatewayError && err.code === 'invalid_request') return { ok: false, code: 'invalid_request', param: err.param };
    throw err;
  }
}
