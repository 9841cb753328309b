// pino, JSON to standard output. What may be logged: method, path, status,
// timings, ids. Never a key, a header value, a prompt, an answer or a body.
import { pino, type Logger } from 'pino';
import { LineWriter } from './line-writer.js';
import { markPlain } from './request-line.js';

export type { Logger };

export function createLogger(level: string, role: string): Logger {
  const logger = pino(
    {
      level,
      base: { pid: process.pid, role },
      // A defence in depth: none of these are ever passed to the logger.
      redact: { paths: ['authorization', 'secret', 'key', 'body', 'prompt', 'messages', 'input'], remove: true },
    },
    new LineWriter(1),
  );
  // Its lines' format is pino's default, which request-line.ts writes too for the request line.
  markPlain(logger);
  return logger;
}

/** Writes what this turn has queued before exit, so the last lines are not lost. */
export function flushLogger(logger: Logger): Promise<void> {
  return new Promise((resolve) => logger.flush(() => resolve()));
}
