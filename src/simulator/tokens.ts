// Real o200k_base token counts for usage.
//
// Input tokens = tokens of the text of every turn (system/instructions
// included) joined with "\n", plus INPUT_TOKENS_PER_MESSAGE per turn, which
// stands for the role and separator tokens a chat template adds around each
// turn (OpenAI documents 3 for its chat format).
import { get_encoding, type Tiktoken } from 'tiktoken';
import { BoundedCache } from './cache.js';

export const INPUT_TOKENS_PER_MESSAGE = 3;

let encoder: Tiktoken | null = null;

/** Loads the encoder (~150 ms); called once at start so no request pays for it. */
export function loadEncoder(): Tiktoken {
  if (encoder === null) encoder = get_encoding('o200k_base');
  return encoder;
}

// Tokenizing costs ~200 µs per KB while a Map lookup of the same string costs
// one hash of it; benchmarks send the same body again and again.
const memo = new BoundedCache<number>(1024, 8 << 20);

/** o200k token count of `text`; `encode_ordinary` because `encode` throws on special-token text. */
export function countTokens(text: string): number {
  if (text.length === 0) return 0;
  const hit = memo.get(text);
  if (hit !== undefined) return hit;
  const n = loadEncoder().encode_ordinary(text).length;
  memo.set(text, n);
  return n;
}

/** Input tokens of a conversation given the text of each of its `turns`. */
export function countInput(texts: string[], turns: number): number {
  const joined = texts.length === 1 ? (texts[0] as string) : texts.join('\n');
  return countTokens(joined) + INPUT_TOKENS_PER_MESSAGE * turns;
}
