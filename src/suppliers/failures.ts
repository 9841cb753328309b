// What a failed attempt at a route was, for failover and the breaker. Shared
// by the dispatcher (attempts made on the event loop) and the pool thread that
// makes attempts for surfaces whose replies are megabytes (workers/fetch-reply.ts),
// so both classify an error the same way.
import { errors as undiciErrors } from 'undici';

export type FailureKind = 'connect' | 'timeout' | 'overloaded' | 'server' | 'client' | 'credential';

const RETRYABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

/** An attempt that failed on another thread, with the kind that thread found (its undici error cannot cross). */
export class AttemptFailed extends Error {
  constructor(readonly kind: 'connect' | 'timeout') {
    super(`supplier attempt failed (${kind})`);
  }
}

/** An error thrown by an attempt: a kind worth the next route, or null (not a supplier failure: rethrown). */
export function classify(err: unknown): 'connect' | 'timeout' | null {
  if (err instanceof AttemptFailed) return err.kind;
  if (err instanceof undiciErrors.ConnectTimeoutError || err instanceof undiciErrors.HeadersTimeoutError || err instanceof undiciErrors.BodyTimeoutError) {
    return 'timeout';
  }
  const code = (err as NodeJS.ErrnoException)?.code;
  return code !== undefined && RETRYABLE_CODES.has(code) ? 'connect' : null;
}
