// Structured output: a request whose response_format (chat) or text.format
// (responses) carries a JSON schema, or whose tool_choice forces a tool
// (messages: the input_schema), is answered by JSON that conforms to it,
// the same for the same schema, so a client's generateObject, .parse() or
// schema validation works against the demo. The schema subset clients emit
// (zod, pydantic): object, array, string (enum, const, format, minLength),
// number and integer (bounds), boolean, null, anyOf/oneOf/allOf (the first
// branch), type lists, and local $ref (#/$defs/…, #/definitions/…).
// json_object is answered by a one-member object.
import { isRecord, type Json } from './common.js';
import { loadEncoder } from './tokens.js';
import { WORD_LIST } from './words.js';

/** Beyond this depth a value is null (a recursive schema would never end). */
const MAX_DEPTH = 12;
/** Answers of at most this many characters: a schema of thousands of members still answers quickly. */
const MAX_CHARS = 64 * 1024;

/** The structured answer a request asks for, as JSON text; null when it asks for plain text. */
export function structuredAnswer(format: unknown): string | null {
  if (!isRecord(format)) return null;
  if (format.type === 'json_object') return '{"answer":"the quick brown fox"}';
  if (format.type !== 'json_schema') return null;
  // Chat nests the schema in json_schema; responses' text.format carries it directly.
  const schema = isRecord(format.json_schema) ? format.json_schema.schema : format.schema;
  if (!isRecord(schema)) return '{}';
  const state = { root: schema, chars: 0, words: 0 };
  const text = JSON.stringify(valueOf(schema, state, 0));
  return text === undefined ? 'null' : text;
}

/** The answer cut at its o200k token boundaries: one streamed piece per output token, as the words are. */
export function tokenPieces(text: string): string[] {
  const enc = loadEncoder();
  const decoder = new TextDecoder();
  const pieces: string[] = [];
  // The answer is ASCII (the word list, digits, punctuation), so every token decodes on its own.
  for (const token of enc.encode_ordinary(text)) pieces.push(decoder.decode(enc.decode(new Uint32Array([token]))));
  return pieces;
}

interface State {
  root: Json;
  chars: number;
  words: number;
}

function resolve(schema: Json, state: State): Json {
  let s = schema;
  for (let hops = 0; typeof s.$ref === 'string' && hops < MAX_DEPTH; hops++) {
    const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(s.$ref as string);
    const defs = m === null ? undefined : state.root[m[1]!];
    const target = isRecord(defs) ? defs[m![2]!] : s.$ref === '#' ? state.root : undefined;
    if (!isRecord(target)) return {};
    s = target;
  }
  return s;
}

function word(state: State): string {
  return WORD_LIST[state.words++ % WORD_LIST.length] as string;
}

function stringOf(s: Json, state: State): string {
  const format = s.format;
  if (format === 'date-time') return '2026-01-01T00:00:00Z';
  if (format === 'date') return '2026-01-01';
  if (format === 'time') return '00:00:00';
  if (format === 'email') return 'sim@example.com';
  if (format === 'uri' || format === 'url') return 'https://example.com/';
  if (format === 'uuid') return '00000000-0000-4000-8000-000000000000';
  const min = typeof s.minLength === 'number' ? s.minLength : 0;
  const max = typeof s.maxLength === 'number' ? s.maxLength : Infinity;
  let text = word(state);
  while (text.length < min) text += ' ' + word(state);
  return text.length > max ? text.slice(0, max) : text;
}

function numberOf(s: Json, integer: boolean): number {
  const min = typeof s.minimum === 'number' ? s.minimum : typeof s.exclusiveMinimum === 'number' ? s.exclusiveMinimum + 1 : null;
  const max = typeof s.maximum === 'number' ? s.maximum : typeof s.exclusiveMaximum === 'number' ? s.exclusiveMaximum - 1 : null;
  let n = min !== null ? min : max !== null ? Math.min(max, 1) : 1;
  if (integer) n = Math.ceil(n);
  return n;
}

function typeOf(s: Json): string | undefined {
  if (Array.isArray(s.type)) return (s.type as unknown[]).find((t) => t !== 'null') as string | undefined ?? 'null';
  if (typeof s.type === 'string') return s.type;
  if (isRecord(s.properties)) return 'object';
  if (isRecord(s.items)) return 'array';
  return undefined;
}

function valueOf(schema: Json, state: State, depth: number): unknown {
  const s = resolve(schema, state);
  if (depth > MAX_DEPTH || state.chars > MAX_CHARS) return null;
  if ('const' in s) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  for (const key of ['anyOf', 'oneOf', 'allOf']) {
    const branches = s[key];
    if (Array.isArray(branches) && branches.length > 0) {
      // The first branch that is not a bare null, so an optional member still shows a value.
      const pick = (branches as unknown[]).find((b) => isRecord(b) && b.type !== 'null') ?? branches[0];
      return isRecord(pick) ? valueOf(pick, state, depth + 1) : null;
    }
  }
  switch (typeOf(s)) {
    case 'object': {
      const out: Json = {};
      const props = isRecord(s.properties) ? s.properties : {};
      for (const [name, sub] of Object.entries(props)) {
        state.chars += name.length + 4;
        out[name] = isRecord(sub) ? valueOf(sub, state, depth + 1) : null;
      }
      return out;
    }
    case 'array': {
      const min = typeof s.minItems === 'number' ? Math.min(s.minItems, 64) : 0;
      const max = typeof s.maxItems === 'number' ? s.maxItems : Infinity;
      const count = Math.min(Math.max(min, 1), max);
      const items = isRecord(s.items) ? s.items : {};
      const out: unknown[] = [];
      for (let i = 0; i < count; i++) out.push(valueOf(items, state, depth + 1));
      return out;
    }
    case 'string': {
      const text = stringOf(s, state);
      state.chars += text.length + 2;
      return text;
    }
    case 'integer':
      return numberOf(s, true);
    case 'number':
      return numberOf(s, false);
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      // A schema that says nothing ({}): any value conforms.
      return word(state);
  }
}
