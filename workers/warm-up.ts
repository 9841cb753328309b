// piscina task: readies a pool thread that the HTTP worker keeps warm
// (pools.piscina_min_threads, issue 38 item 2). A thread that starts cold
// makes its first task wait for the task file, the surfaces' code and, for a
// count, the o200k tokenizer: 1–3 s on a loaded 2-core machine, which a
// refusal for funds or a 24 KB call should not wait for. Here they are all
// loaded once, at the worker's start: the task files are then found in the
// thread's module cache when their first real task comes.
import countTokens from './count-tokens.js';
import './decode-local.js';
import './decode-reply.js';
import './prepare-request.js';

export default async function warmUp(): Promise<void> {
  await countTokens(['warm']);
}
