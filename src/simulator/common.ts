// Small pieces shared by the protocol modules: ids, the tool call's
// arguments, and reading text out of loosely typed request JSON.
import { randomBytes } from 'node:crypto';
import { answerJson, wordChunkJson } from './words.js';

export type Json = Record<string, unknown>;

// A per-process tag keeps ids from two simulator processes apart; the
// counter keeps them unique and cheap within one.
const RUN = randomBytes(3).toString('hex');
let seq = 0;

export function nextId(prefix: string): string {
  return `${prefix}${RUN}${(++seq).toString(36).padStart(8, '0')}`;
}

export function unixSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/** Arguments of every simulated tool call. */
export const TOOL_ARGUMENTS = '{"sim":true}';
export const TOOL_ARGUMENTS_JSON = JSON.stringify(TOOL_ARGUMENTS);
/** TOOL_ARGUMENTS cut at its o200k token boundaries: one streamed fragment per output token. */
export const TOOL_FRAGMENTS: readonly string[] = ['{"', 'sim', '":', 'true', '}'];
export const TOOL_FRAGMENTS_JSON: readonly string[] = TOOL_FRAGMENTS.map((f) => JSON.stringify(f));

export function isRecord(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Text of a content value: a string, or the concatenated `text` of the array
 * parts whose type is one of `types`.
 */
export function contentText(content: unknown, types: readonly string[]): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const part of content) {
    if (isRecord(part) && typeof part.text === 'string' && types.includes(part.type as string)) text += part.text;
  }
  return text;
}

/** A non-negative integer ceiling from the request, or Infinity when absent or malformed. */
export function ceilingOf(v: unknown): number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : Infinity;
}

/** OpenAI's bounds on `n`, the number of choices. */
export const MAX_CHOICES = 128;

/** Choices asked for: `n` absent or null is 1; null when it is not an integer in 1..MAX_CHOICES. */
export function choicesOf(v: unknown): number | null {
  if (v === undefined || v === null) return 1;
  return typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= MAX_CHOICES ? v : null;
}

/** Whether `tools` declares a tool called `name`; `fn` reads a tool's name. */
export function declaresTool(tools: unknown, name: string, fn: (tool: Json) => unknown): boolean {
  if (!Array.isArray(tools)) return false;
  for (const t of tools) if (isRecord(t) && fn(t) === name) return true;
  return false;
}

/** The answer a request gets: words (possibly cut by the ceiling) or one tool call. */
export interface Plan {
  /** Name of the tool to call, or null for a text answer. */
  tool: string | null;
  /** Content chunks: words, or argument fragments of the tool call. */
  chunks: number;
  /** True when the ceiling cut the answer. */
  cut: boolean;
  /** A structured answer's pieces (one per output token: structured.ts); null for words or a tool call. */
  pieces: readonly string[] | null;
}

/** A text answer of words, a structured answer (its pieces), or one tool call; the ceiling cuts a text answer. */
export function plan(tool: string | null, words: number, ceiling: number, pieces: readonly string[] | null = null): Plan {
  if (tool !== null) return { tool, chunks: TOOL_FRAGMENTS.length, cut: false, pieces: null };
  const count = pieces === null ? words : pieces.length;
  return count > ceiling ? { tool, chunks: ceiling, cut: true, pieces } : { tool, chunks: count, cut: false, pieces };
}

/** The text answer as a JSON string literal: its first p.chunks words or pieces. */
export function answerOf(p: Plan): string {
  return p.pieces === null ? answerJson(p.chunks) : JSON.stringify(p.pieces.slice(0, p.chunks).join(''));
}

/** The i-th chunk of the text answer as a JSON string literal. */
export function chunkOf(p: Plan, i: number): string {
  return p.pieces === null ? wordChunkJson(i) : JSON.stringify(p.pieces[i]);
}
