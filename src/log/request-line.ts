// The request log line (one per HTTP request, server/http-server.ts) written
// from JSON its callers assemble from fragments made once (a model's name, a
// route's supplier and upstream model) and per-call numbers, rather than as
// an object that pino walks key by key: pino's generic path (a property added
// per field, then for each one a serializer lookup, a type switch and the key
// escaped anew) is what made issue 37's longer line cost more CPU per call
// than the line it replaced. The line is byte for byte what pino writes for
// the same fields — level, time, the logger's bindings, the fields, msg — and
// goes to the same destination, so a reader cannot tell the two apart.
import { pino, type Logger } from 'pino';
import { LineWriter } from './line-writer.js';

/** Loggers made by createLogger (logger.ts): epoch time, no mixin, formatters or hooks, messages under `msg`. */
const plainLoggers = new WeakSet<Logger>();

export function markPlain(logger: Logger): void {
  plainLoggers.add(logger);
}

type PinoInternals = Record<symbol, unknown>;

export class InfoLines {
  private readonly stream: LineWriter;

  private constructor(
    private readonly logger: Logger,
    stream: LineWriter,
  ) {
    this.stream = stream;
  }

  /**
   * Lines for this logger, or null when it is not one whose output is known
   * (a child, another destination, a logger a test made): its callers then
   * log an object, as before.
   */
  static of(logger: Logger): InfoLines | null {
    if (!plainLoggers.has(logger)) return null;
    const stream = (logger as unknown as PinoInternals)[pino.symbols.streamSym];
    return stream instanceof LineWriter ? new InfoLines(logger, stream) : null;
  }

  /** Whether info lines are written at the logger's level now (it can change at run time). */
  get enabled(): boolean {
    return this.logger.isLevelEnabled('info');
  }

  /**
   * One info line: `members` are the fields as JSON members without braces
   * (`"rid":"…","status":200,…`), `msg` the message already as a JSON string.
   * The caller checks `enabled` first.
   */
  write(members: string, msg: string): void {
    const bindings = (this.logger as unknown as PinoInternals)[pino.symbols.chindingsSym] as string;
    this.stream.write('{"level":30,"time":' + Date.now() + bindings + ',' + members + ',"msg":' + msg + '}\n');
  }
}

/**
 * A string as a JSON string, as pino writes it: quotes around it, `"` and
 * `\` escaped, JSON.stringify for anything with a control character or long.
 */
export function jsonString(s: string): string {
  const n = s.length;
  if (n > 100) return JSON.stringify(s);
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 32 || c === 34 || c === 92) return JSON.stringify(s);
  }
  return '"' + s + '"';
}
