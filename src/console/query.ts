// Query strings of the console's list endpoints, read and validated in one
// place: every parameter is known, bounded and well-formed, or the request is
// refused with 400 naming it (REST envelope). Names are looked up as the
// spec's own properties only (`hasOwnProperty`, `__proto__`, `constructor` are
// unknown parameters, not Object.prototype's members). Cursors are opaque to
// callers: base64url of the last row's sort key, checked strictly here so that
// no value a caller makes up reaches a cast in SQL (issue 30 item 9).
import { GatewayError, type FieldDetail } from '../errors/gateway-error.js';

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;
const MAX_QUERY = 2048;

type Spec = Record<string, (value: string) => string | null>;

function bad(field: string, issue: string): GatewayError {
  const details: FieldDetail[] = [{ field, issue }];
  return new GatewayError('invalid_request', { param: field, fieldDetails: details });
}

/** Parses `query` against `spec` (name → validator returning an issue or null). Never throws anything but a 400. */
export function readQuery(query: string, spec: Spec): Map<string, string> {
  const out = new Map<string, string>();
  if (query === '') return out;
  if (query.length > MAX_QUERY) throw bad('(query)', `must be at most ${MAX_QUERY} characters`);
  for (const pair of query.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    let name: string;
    let value: string;
    try {
      name = decodeURIComponent((eq < 0 ? pair : pair.slice(0, eq)).replaceAll('+', ' '));
      value = decodeURIComponent((eq < 0 ? '' : pair.slice(eq + 1)).replaceAll('+', ' '));
    } catch {
      throw bad('(query)', 'is not valid percent-encoding');
    }
    if (!Object.hasOwn(spec, name)) throw bad(name, 'unknown query parameter');
    const check = spec[name];
    if (out.has(name)) throw bad(name, 'given more than once');
    const issue = check(value);
    if (issue !== null) throw bad(name, issue);
    out.set(name, value);
  }
  return out;
}

export const isLimit = (v: string): string | null => (/^[1-9][0-9]{0,2}$/.test(v) && Number(v) <= MAX_LIMIT ? null : `must be an integer from 1 to ${MAX_LIMIT}`);
export const isCursor = (v: string): string | null => (/^[A-Za-z0-9_-]{1,200}$/.test(v) ? null : 'must be a cursor from a previous page');
export const isUuidText = (v: string): string | null =>
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v) ? null : 'must be a UUID';
export const isDay = (v: string): string | null => {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(v)) return 'must be a day as YYYY-MM-DD';
  const d = new Date(`${v}T00:00:00Z`);
  return Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== v ? 'must be a real calendar day' : null;
};
export const isText = (max: number) => (v: string): string | null => (v.length <= max && !/[\u0000-\u001f\u007f]/.test(v) ? null : `must be at most ${max} printable characters`);
export const isDays = (v: string): string | null => (/^[1-9][0-9]{0,2}$/.test(v) && Number(v) <= 366 ? null : 'must be an integer from 1 to 366');

export function limitOf(q: Map<string, string>): number {
  return q.has('limit') ? Number(q.get('limit')) : DEFAULT_LIMIT;
}

/** A cursor holds the sort key of the last row shown: [time ISO, id]. */
export function encodeCursor(at: Date | string, id: string): string {
  return Buffer.from(JSON.stringify([typeof at === 'string' ? at : at.toISOString(), id])).toString('base64url');
}

/** What a list's row ids look like: the id half of its cursor must be one. */
export type CursorId = (id: string) => boolean;
export const UUID_ID: CursorId = (id) => isUuidText(id) === null;
/** Request ids (`req_…`): printable ASCII, compared as text. */
export const REQUEST_ID: CursorId = (id) => /^[\x21-\x7e]{1,200}$/.test(id);

/**
 * A cursor's time as encodeCursor and the store write it (UTC, up to
 * microseconds) and a real instant PostgreSQL accepts: `2020`, a 30th of
 * February or year 0 are not.
 */
function isCursorTime(at: string): boolean {
  const m = /^([1-9]\d{3}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d{1,6})?Z$/.exec(at);
  if (m === null) return false;
  const t = Date.parse(m[1] + 'Z');
  return !Number.isNaN(t) && new Date(t).toISOString().slice(0, 19) === m[1];
}

export function decodeCursor(q: Map<string, string>, isId: CursorId): { at: string; id: string } | null {
  const raw = q.get('cursor');
  if (raw === undefined) return null;
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    v = null;
  }
  if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string' && isCursorTime(v[0]) && isId(v[1])) {
    return { at: v[0], id: v[1] };
  }
  throw bad('cursor', 'must be a cursor from a previous page');
}
