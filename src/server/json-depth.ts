// Bounds how deeply a JSON body nests, on its raw bytes, before JSON.parse.
// V8's JSON.parse, JSON.stringify and ajv all recurse: a body of 100k nested
// arrays inside a tool argument overflowed the stack (a 500) and blocked the
// loop while it tried. A byte scan costs a fraction of the parse it guards
// (bench/micro/json-depth.ts) and needs no tree. Pure: the HTTP worker runs
// it on small bodies and the worker-thread pool on large ones.
//
// Only four bytes matter outside strings ([ { ] }); a string is skipped to
// its closing quote (an escaped quote is preceded by an odd run of
// backslashes). UTF-8 continuation bytes are all >= 0x80, so they never look
// like structure. Malformed JSON is not judged here: JSON.parse does that.
import { GatewayError } from '../errors/gateway-error.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;
const COMMA = 0x2c;

/** Strings longer than this are skipped with a native search instead of the byte loop. */
const LONG_STRING = 32;

/** Index of the closing quote of the string opened at `open`, or bytes.length. */
function stringEnd(b: Uint8Array, open: number): number {
  const n = b.length;
  // Most strings are short: a plain loop beats a native call for them.
  const stop = Math.min(n, open + LONG_STRING);
  let i = open + 1;
  for (; i < stop; i++) {
    const c = b[i];
    if (c === QUOTE) return i;
    if (c === BACKSLASH) i++;
  }
  // A long string: jump from quote to quote. A quote is escaped when an odd
  // run of backslashes precedes it (a run always starts after a byte that is
  // not a backslash, so its parity decides).
  for (;;) {
    const q = b.indexOf(QUOTE, i);
    if (q < 0) return n;
    let slashes = 0;
    for (let k = q - 1; k > open && b[k] === BACKSLASH; k--) slashes++;
    if ((slashes & 1) === 0) return q;
    i = q + 1;
  }
}

/** Index of the byte where nesting first goes deeper than `maxDepth`, or -1. */
export function nestingBeyond(b: Uint8Array, maxDepth: number): number {
  const n = b.length;
  let depth = 0;
  for (let i = 0; i < n; i++) {
    const c = b[i];
    if (c === QUOTE) i = stringEnd(b, i);
    else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > maxDepth) return i;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--;
  }
  return -1;
}

interface Frame {
  array: boolean;
  /** Object: the member being read (null between members). Array: unused. */
  key: string | null;
  /** Array: the index of the element being read. */
  index: number;
  expectKey: boolean;
}

const MAX_KEY_CHARS = 64;
const MAX_PARAM_CHARS = 256;

function keyText(b: Uint8Array, open: number, close: number): string {
  const raw = Buffer.from(b.buffer, b.byteOffset + open, close - open + 1).toString('utf8');
  let key: string;
  try {
    key = JSON.parse(raw) as string;
  } catch {
    key = raw.slice(1, -1);
  }
  return key.length > MAX_KEY_CHARS ? key.slice(0, MAX_KEY_CHARS) + '…' : key;
}

/**
 * The member that holds the too-deep value at `at` (from nestingBeyond), as a
 * `param`: `messages[0].tool_calls[0].function.arguments`. Trailing array
 * indices are dropped (the nearest *named* member is what a caller can find),
 * and a very deep path is cut. Null when the nesting starts at the top level.
 * Cold path: only runs for a body that is refused.
 */
export function memberAt(b: Uint8Array, at: number): string | null {
  const stack: Frame[] = [];
  for (let i = 0; i < at; i++) {
    const c = b[i];
    const top = stack.length > 0 ? stack[stack.length - 1] : null;
    if (c === QUOTE) {
      const end = stringEnd(b, i);
      if (top !== null && top.expectKey) {
        top.key = keyText(b, i, Math.min(end, b.length - 1));
        top.expectKey = false;
      }
      i = end;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      stack.push({ array: c === OPEN_ARRAY, key: null, index: 0, expectKey: c === OPEN_OBJECT });
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) stack.pop();
    else if (c === COMMA && top !== null) {
      if (top.array) top.index++;
      else {
        top.key = null;
        top.expectKey = true;
      }
    }
  }
  // Each frame's key or index names its child; the last frame's child is the refused value.
  let named = 0;
  for (let k = 0; k < stack.length; k++) if (!stack[k].array && stack[k].key !== null) named = k + 1;
  let param = '';
  for (let k = 0; k < named; k++) {
    const f = stack[k];
    const part = f.array ? `[${f.index}]` : param === '' ? f.key! : `.${f.key!}`;
    if (param.length + part.length > MAX_PARAM_CHARS) return param + '…';
    param += part;
  }
  return param === '' ? null : param;
}

/** Null when `b` nests at most `maxDepth` deep; else the param naming where (see memberAt), or '' at the top level. */
export function nestingFault(b: Uint8Array, maxDepth: number): string | null {
  const at = nestingBeyond(b, maxDepth);
  if (at < 0) return null;
  return memberAt(b, at) ?? '';
}

/** The refusal for a body nested too deeply; `param` from nestingFault. */
export function nestingError(param: string | null, maxDepth: number): GatewayError {
  const field = param === null || param === '' ? '(body)' : param;
  return new GatewayError('nesting_too_deep', {
    param: param === null || param === '' ? undefined : param,
    fieldDetails: [{ field, issue: `arrays and objects nest deeper than ${maxDepth} levels here` }],
  });
}
