// [sim:...] directives written in the text of a request's last user turn.
//
// Parsed with indexOf rather than a regex: the common case (no directive) is
// one failed indexOf and returns a shared constant, allocating nothing.

export interface Directives {
  /** Words in the answer; -1 = not stated (the default applies). */
  readonly words: number;
  /** HTTP status to fail with before any byte of an answer; 0 = none. */
  readonly status: number;
  /** Content chunks to send before dropping the connection; -1 = never drop. */
  readonly failAfter: number;
  /** Wait before each content chunk (unary: before answering). */
  readonly delayMs: number;
  /** Streams: content chunks sent as fast as the socket takes them before delay_ms starts to apply (0: from the first). */
  readonly delayAfter: number;
  /** Name of a declared tool to call instead of answering text; null = none. */
  readonly tool: string | null;
  /** Leave usage out of the answer. */
  readonly noUsage: boolean;
  /** Input tokens to report in usage instead of the real count (a supplier counting more than the gateway reserved); -1 = the real count. */
  readonly inputTokens: number;
  /**
   * Bytes of filler with no newline: a stream sends them instead of any event
   * (or, with fail_after, where it would drop the connection), then drops it;
   * a unary answer sends them after its JSON as trailing whitespace. 0 = none.
   */
  readonly flood: number;
}

export const NO_DIRECTIVES: Directives = Object.freeze({
  words: -1,
  status: 0,
  failAfter: -1,
  delayMs: 0,
  delayAfter: 0,
  tool: null,
  noUsage: false,
  inputTokens: -1,
  flood: 0,
});

const OPEN = '[sim:';

/** Non-negative integer value of a directive, or -1 when malformed. */
function count(value: string): number {
  if (value.length === 0 || value.length > 9) return -1;
  const n = Number(value);
  return Number.isInteger(n) && n >= 0 ? n : -1;
}

/**
 * Directives in `text` that apply on `instance`: unscoped ones and those
 * scoped with `@instance`. Malformed or unknown directives are ignored; a
 * later directive overrides an earlier one of the same kind.
 */
export function parseDirectives(text: string, instance: string): Directives {
  let at = text.indexOf(OPEN);
  if (at === -1) return NO_DIRECTIVES;
  let words = -1;
  let status = 0;
  let failAfter = -1;
  let delayMs = 0;
  let delayAfter = 0;
  let tool: string | null = null;
  let noUsage = false;
  let inputTokens = -1;
  let flood = 0;
  while (at !== -1) {
    const start = at + OPEN.length;
    const end = text.indexOf(']', start);
    if (end === -1) break;
    at = text.indexOf(OPEN, end);
    let body = text.slice(start, end);
    const scope = body.lastIndexOf('@');
    if (scope !== -1) {
      if (body.slice(scope + 1) !== instance) continue;
      body = body.slice(0, scope);
    }
    const eq = body.indexOf('=');
    const key = eq === -1 ? body : body.slice(0, eq);
    const value = eq === -1 ? '' : body.slice(eq + 1);
    switch (key) {
      case 'words':
        if (count(value) !== -1) words = count(value);
        break;
      case 'status': {
        const n = count(value);
        if (n >= 400 && n <= 599) status = n;
        break;
      }
      case 'fail_after':
        if (count(value) !== -1) failAfter = count(value);
        break;
      case 'delay_ms':
        if (count(value) !== -1) delayMs = count(value);
        break;
      case 'delay_after':
        if (count(value) !== -1) delayAfter = count(value);
        break;
      case 'tool':
        if (value.length > 0) tool = value;
        break;
      case 'no_usage':
        noUsage = true;
        break;
      case 'input_tokens':
        if (count(value) !== -1) inputTokens = count(value);
        break;
      case 'flood':
        if (count(value) !== -1) flood = count(value);
        break;
    }
  }
  return { words, status, failAfter, delayMs, delayAfter, tool, noUsage, inputTokens, flood };
}
