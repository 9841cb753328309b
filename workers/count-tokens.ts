// piscina task: counts o200k_base tokens of each text. Runs in a worker
// thread because tiktoken costs ~200 µs per KB (STACK.md), more than the whole
// proxy budget of a request. encode_ordinary, not encode: user text may
// contain special-token strings such as <|endoftext|>, which encode() throws on.
// tiktoken is imported on first use, so a thread that only prepares bodies
// never loads the tokenizer.
import type { Tiktoken } from 'tiktoken';
import './thread-priority.js';

let encoder: Tiktoken | null = null;

export default async function countTokens(texts: string[]): Promise<number[]> {
  encoder ??= (await import('tiktoken')).get_encoding('o200k_base');
  const out = new Array<number>(texts.length);
  for (let i = 0; i < texts.length; i++) out[i] = texts[i] === '' ? 0 : encoder.encode_ordinary(texts[i]).length;
  return out;
}
