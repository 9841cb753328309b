// pino, JSON to standard output. What may be logged: method, path, status,
// timings, ids. Never a key, a header value, a prompt, an answer or a body.
import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * Lines are written to standard output in blocks of at least this many bytes
 * (about a dozen request lines), and whatever is buffered at least every
 * LOG_FLUSH_MS: one write per block instead of one per line, and one
 * thread-pool wake-up instead of a dozen. The cost: a process killed with
 * SIGKILL, or crashing on an uncaught exception, loses the lines of its last
 * LOG_FLUSH_MS at most; a process that stops normally flushes (flushLogger).
 */
const LOG_BUFFER_BYTES = 4096;
const LOG_FLUSH_MS = 50;

export function createLogger(level: string, role: string): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid, role },
      // A defence in depth: none of these are ever passed to the logger.
      redact: { paths: ['authorization', 'secret', 'key', 'body', 'prompt', 'messages', 'input'], remove: true },
    },
    pino.destination({ dest: 1, sync: false, minLength: LOG_BUFFER_BYTES, periodicFlush: LOG_FLUSH_MS }),
  );
}

/** Flushes an async destination before exit, so the last lines are not lost. */
export function flushLogger(logger: Logger): Promise<void> {
  return new Promise((resolve) => logger.flush(() => resolve()));
}
