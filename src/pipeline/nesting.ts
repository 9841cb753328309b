// Bounds the nesting of a model call's body (http.max_json_depth) before it
// is parsed: V8's JSON.parse, JSON.stringify and ajv all recurse, and a deep
// body would overflow the stack (a 500) after blocking the loop. Bodies that
// are prepared inline are scanned here; larger ones are scanned by the pool
// task (workers/prepare-request.ts) before its own parse, off the event loop.
import { nestingError, nestingFault } from '../server/json-depth.js';
import type { ModelCall } from './call.js';

export function boundNesting(call: ModelCall): void {
  const raw = call.ctx.rawBody!;
  // The same threshold prepare() uses to choose the pool.
  if (raw.length > call.deps.offloadBodyBytes) return;
  const fault = nestingFault(raw, call.deps.maxJsonDepth);
  if (fault !== null) throw nestingError(fault, call.deps.maxJsonDepth);
}
