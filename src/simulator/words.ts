// The answer text. Every word below is exactly one o200k_base token both bare
// and with a leading space (pinned by a test), so an answer of N words costs N
// output tokens, and each word's JSON string literal is the word in quotes.

const WORDS = [
  'the', 'quick', 'brown', 'fox', 'over', 'lazy', 'dog', 'river',
  'stone', 'light', 'green', 'blue', 'red', 'silver', 'gold', 'water',
  'fire', 'earth', 'wind', 'cloud', 'rain', 'snow', 'tree', 'leaf',
  'root', 'branch', 'bird', 'song', 'night', 'day', 'sun', 'moon',
  'star', 'sky', 'wave', 'sand', 'hill', 'road', 'bridge', 'city',
  'town', 'house', 'door', 'window', 'garden', 'flower', 'bread', 'salt',
  'apple', 'orange', 'paper', 'letter', 'story', 'voice', 'sound', 'music',
  'dance', 'dream', 'memory', 'time', 'world', 'heart', 'mind', 'hand',
] as const;

export const WORD_LIST: readonly string[] = WORDS;

/** Words in an answer when the request carries no [sim:words=N]. */
export const DEFAULT_WORDS = 8;

// Chunk i of an answer: the first word bare, every later one after a space.
const SPACED: readonly string[] = WORDS.map((w) => ' ' + w);
const SPACED_JSON: readonly string[] = SPACED.map((w) => JSON.stringify(w));
const FIRST = WORDS[0];
const FIRST_JSON = JSON.stringify(FIRST);

/** Text of the i-th chunk of an answer. */
export function wordChunk(i: number): string {
  return i === 0 ? FIRST : (SPACED[i % SPACED.length] as string);
}

/** The i-th chunk as a JSON string literal. */
export function wordChunkJson(i: number): string {
  return i === 0 ? FIRST_JSON : (SPACED_JSON[i % SPACED_JSON.length] as string);
}

// One full cycle, so an answer of up to 64 words is a slice of a constant.
const CYCLE = WORDS.join(' ');
const CYCLE_END: readonly number[] = WORDS.map((_, i) => WORDS.slice(0, i + 1).join(' ').length);

/** The whole answer of `n` words, as the chunks concatenate. */
export function answerText(n: number): string {
  if (n <= 0) return '';
  if (n <= WORDS.length) return CYCLE.slice(0, CYCLE_END[n - 1]);
  const parts: string[] = new Array<string>(n);
  for (let i = 0; i < n; i++) parts[i] = wordChunk(i);
  return parts.join('');
}

const ANSWER_JSON: string[] = [];

/** JSON string literal of answerText(n). */
export function answerJson(n: number): string {
  if (n > WORDS.length) return JSON.stringify(answerText(n));
  return (ANSWER_JSON[n] ??= JSON.stringify(answerText(n)));
}
