// piscina task: parse, validate and prepare a large request body off the
// event loop. The HTTP worker hands over the raw bytes (transferred, not
// copied) and gets back plain data: the prepared request or the refusal.
// Measured by bench/micro/prepare.ts (main-thread µs per request, inline vs
// pool): 8 KB 19 vs 42, 16 KB 40 vs 39, 33 KB 81 vs 35, 130 KB 449 vs 208 —
// hence pools.offload_body_bytes = 16384.
import { GatewayError } from '../src/errors/gateway-error.js';
import { nestingFault } from '../src/server/json-depth.js';
import { modelCallNamed } from '../src/surfaces/index.js';
import type { PrepareResult } from '../src/surfaces/surface.js';
import './thread-priority.js';

export interface PrepareTask {
  /** The surface's registry name (src/surfaces/index.ts). */
  surface: string;
  body: Uint8Array;
  /** http.max_json_depth: a deeper body is refused before it is parsed (parse and stringify recurse). */
  maxDepth: number;
}

const decoder = new TextDecoder();

export default function prepareRequest(task: PrepareTask): PrepareResult {
  const fault = nestingFault(task.body, task.maxDepth);
  if (fault !== null) return { ok: false, code: 'nesting_too_deep', param: fault === '' ? null : fault };
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(task.body));
  } catch {
    return { ok: false, code: 'invalid_json', param: null };
  }
  try {
    return { ok: true, prepared: modelCallNamed(task.surface).prepare(parsed, task.body.byteLength) };
  } catch (err) {
    if (err instanceof GatewayError && err.code === 'invalid_request') return { ok: false, code: 'invalid_request', param: err.param, message: err.message };
    throw err;
  }
}
