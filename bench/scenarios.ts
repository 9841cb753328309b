// The scenarios: what is sent, how (connections, keep-alive, streaming), and
// what the answer must end with. The same body goes to every target; the
// simulator's directives ([sim:...], README "The simulator supplier") fix the
// answer's size and pacing so every target gets exactly the same work.
export interface Scenario {
  id: string;
  title: string;
  /** The path on the gateway (after a target's prefix); chat completions when absent. */
  path?: string;
  stream: boolean;
  keepAlive: boolean;
  concurrency: number;
  body: string;
  expectSuffix: string;
  /** Open loop: requests per second on a fixed schedule (loadgen-job.ts `ratePerSec`); absent: closed loop. */
  rate?: number;
  /** Only meaningful for a gateway (e.g. its tokenizer pool); not run against direct and bare. */
  gatewayOnly?: boolean;
  /** Part of --full only. */
  fullOnly?: boolean;
  /**
   * A second workload sent beside this one, on its own load generator, for
   * the whole job: this scenario's latency is then what a small call sees
   * while the gateway does that work. Compare with `baseline` (in the same run).
   */
  beside?: Beside;
  note: string;
}

export interface Beside {
  /** Label for the report. */
  what: string;
  path: string;
  body: string;
  concurrency: number;
  /** Open loop: heavy requests per second on a fixed schedule, at most `concurrency` at once; absent: closed loop (as fast as the gateway answers). */
  rate?: number;
  expectSuffix: string;
  /** The scenario this one is compared with: the same foreground alone. */
  baseline: string;
}

export interface SkippedScenario {
  id: string;
  reason: string;
}

const MODEL = 'nw-swift-1';

function chat(content: string, extra: Record<string, unknown> = {}, history: unknown[] = []): string {
  return JSON.stringify({ model: MODEL, messages: [...history, { role: 'user', content }], max_tokens: 128, ...extra });
}

const STREAM = { stream: true, stream_options: { include_usage: true } };

/** A responses request (POST /v1/responses) of the same size and answer as chat(). */
function responses(content: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ model: MODEL, input: [{ role: 'user', content }], max_output_tokens: 128, ...extra });
}
const DONE = 'data: [DONE]\n\n';

/** ~`bytes` of conversation before the question: what a long chat sends on every turn. */
function longHistory(bytes: number, sentence = 'The gateway forwards this earlier turn of a long conversation unchanged. '): unknown[] {
  const turns: unknown[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const content = `${i}: ${sentence.repeat(26)}`;
    size += content.length + 40;
    turns.push({ role: i % 2 === 0 ? 'user' : 'assistant', content });
  }
  return turns;
}

/** The responses surface, beside chat's unary and streaming scenarios (same answer, same connections). */
export const RESPONSES_SCENARIOS: readonly Scenario[] = [
  {
    id: 'responses-unary',
    title: 'unary responses, small body, keep-alive, 32 connections',
    path: '/v1/responses',
    stream: false,
    keepAlive: true,
    concurrency: 32,
    body: responses('Say hello in sixteen words. [sim:words=16]'),
    expectSuffix: '}',
    note: 'The responses surface beside chat\'s unary scenario: the same answer, re-encoded as a ResponsesReply.',
  },
  {
    id: 'responses-stream',
    title: 'streaming responses, 64 deltas, 32 connections',
    path: '/v1/responses',
    stream: true,
    keepAlive: true,
    concurrency: 32,
    body: responses('Tell a story in sixty-four words. [sim:words=64]', { stream: true }),
    expectSuffix: '}\n\n',
    note: 'Every event parsed once and renumbered; the terminal response.completed held until settlement.',
  },
];

/** A ~1 MB conversation for count_tokens (messages protocol). */
function countTokensBody(bytes: number): string {
  const messages = longHistory(bytes, 'A long conversation the caller wants counted before it sends it. ') as Array<{ role: string; content: string }>;
  // Turns alternate and the last is the user's, as the messages protocol expects.
  if (messages[messages.length - 1]!.role !== 'user') messages.push({ role: 'user', content: 'How many tokens?' });
  return JSON.stringify({ model: 'ks-quill-1', messages });
}

/** 128 inputs; the simulator answers 3072-dimension vectors as JSON floats (8.4 MB), which Tollgate decodes in its pool. */
function embeddingsBody(): string {
  const input = Array.from({ length: 128 }, (_, i) => `${i === 0 ? '[sim:floats] [sim:dims=3072] ' : ''}text number ${i} to embed`);
  return JSON.stringify({ model: 'nw-embed-1', encoding_format: 'base64', input });
}

const SMALL_UNARY = chat('Say hello in sixteen words. [sim:words=16]');

/** The small calls of the mixed scenarios: paced, far below what one core serves, so queueing behind each other is not what they measure. */
const SMALL_RATE = 400;

const COUNT_TOKENS_1MB: Beside = { what: 'count_tokens 1 MB', path: '/v1/messages/count_tokens', body: countTokensBody(1_000_000), concurrency: 2, expectSuffix: '}', baseline: 'small-paced' };
const EMBEDDINGS_FLOATS: Beside = { what: 'embeddings 128 × 3072 floats', path: '/v1/embeddings', body: embeddingsBody(), concurrency: 2, expectSuffix: '}', baseline: 'small-paced' };
/** The same batch at a pace the gateway's core has room for (~0.2 of it): what the pool is for, where the closed loop above measures how the scheduler shares a full core. */
const EMBEDDINGS_FLOATS_PACED: Beside = { ...EMBEDDINGS_FLOATS, what: 'embeddings 128 × 3072 floats, 2 a second', concurrency: 4, rate: 2 };

/**
 * The small calls of every mixed scenario: paced, on 8 connections. They and
 * the embeddings beside them also run against direct and bare when --targets
 * names them: the floor the load generators and the simulator put under the
 * ratio (count_tokens is the gateway's own, so those stay gateway-only).
 */
const SMALL_CALLS = { stream: false, keepAlive: true, concurrency: 8, rate: SMALL_RATE, body: SMALL_UNARY, expectSuffix: '}', fullOnly: true } as const;

/** The small calls with heavy work beside them. */
function smallCallsBeside(id: string, besideWhat: string, beside: Beside, note: string, gatewayOnly = false): Scenario {
  return { id, title: `unary chat, ${SMALL_RATE} calls/s, beside ${besideWhat}`, ...SMALL_CALLS, gatewayOnly, beside, note };
}

/**
 * Heavy work beside small chat calls (issues 13 and 16): the small calls go
 * out at a fixed rate (open loop, timed from when each was due) while a
 * second load generator keeps the heavy work going for the whole job; their
 * p99 should stay within 20% of the same calls alone (`small-paced`, in the
 * same run) — the CPU-heavy part runs in the worker-thread pool, not on the
 * event loop that serves them. `count-tokens` and `embeddings` alone give the
 * CPU per heavy request, the event loop's part apart (compare `tollgate` with
 * `tollgate-inline`: the pool on and off for embeddings replies).
 * `npm run bench -- --mixed` runs these.
 */
export const MIXED_SCENARIOS: readonly Scenario[] = [
  {
    id: 'small-paced',
    title: `unary chat, small body, ${SMALL_RATE} calls/s on 8 connections (the baseline of the mixed scenarios)`,
    ...SMALL_CALLS,
    note: 'The small calls of the mixed scenarios, alone.',
  },
  smallCallsBeside('beside-count-tokens', '2 connections of count_tokens on a 1 MB conversation', COUNT_TOKENS_1MB, 'count_tokens parses and counts a 1 MB body in the pool; the small calls should not wait for it.', true),
  smallCallsBeside('beside-embeddings', '2 connections of embeddings 128 × 3072 answered as floats', EMBEDDINGS_FLOATS, 'The supplier answers 8.4 MB of JSON floats; Tollgate decodes and encodes them as float32 base64 in its pool.'),
  smallCallsBeside('beside-embeddings-paced', 'embeddings 128 × 3072 answered as floats at 2 a second', EMBEDDINGS_FLOATS_PACED, 'The same batches on a schedule that leaves the core room: the small calls should not feel them at all.'),
  {
    id: 'count-tokens',
    title: 'count_tokens of a 1 MB conversation, 2 connections, alone',
    path: COUNT_TOKENS_1MB.path,
    stream: false,
    keepAlive: true,
    concurrency: 2,
    body: COUNT_TOKENS_1MB.body,
    expectSuffix: '}',
    gatewayOnly: true,
    fullOnly: true,
    note: 'CPU per 1 MB count_tokens request, and how much of it the event loop pays (the body read and the hop) against the pool thread (parse, count).',
  },
  {
    id: 'embeddings',
    title: 'embeddings 128 × 3072 answered as floats, 2 connections, alone',
    path: EMBEDDINGS_FLOATS.path,
    stream: false,
    keepAlive: true,
    concurrency: 2,
    body: EMBEDDINGS_FLOATS.body,
    expectSuffix: '}',
    fullOnly: true,
    note: 'CPU per embeddings request: with the pool (tollgate) and on the event loop (tollgate-inline).',
  },
];

export const SCENARIOS: readonly Scenario[] = [
  {
    id: 'unary',
    title: 'unary chat, small body, keep-alive, 32 connections',
    stream: false,
    keepAlive: true,
    concurrency: 32,
    body: chat('Say hello in sixteen words. [sim:words=16]'),
    expectSuffix: '}',
    note: 'Throughput and CPU per request: the cost of the gateway per call.',
  },
  {
    id: 'unary-1conn',
    title: 'unary chat, small body, keep-alive, 1 connection',
    stream: false,
    keepAlive: true,
    concurrency: 1,
    body: chat('Say hello in sixteen words. [sim:words=16]'),
    expectSuffix: '}',
    note: 'Latency with no queueing: what one call adds.',
  },
  {
    id: 'unary-newconn',
    title: 'unary chat, small body, a new connection per request, 8 at a time',
    stream: false,
    keepAlive: false,
    concurrency: 8,
    body: chat('Say hello in sixteen words. [sim:words=16]'),
    expectSuffix: '}',
    note: 'Clients that do not keep connections alive: TCP set-up and teardown on every call.',
  },
  {
    id: 'stream',
    title: 'streaming chat, 64 chunks, 1 connection',
    stream: true,
    keepAlive: true,
    concurrency: 1,
    body: chat('Tell a story in sixty-four words. [sim:words=64]', STREAM),
    expectSuffix: DONE,
    note: 'Time to first byte, gaps between events, total: the streaming path with no queueing.',
  },
  {
    id: 'stream-32conn',
    title: 'streaming chat, 64 chunks, 32 connections',
    stream: true,
    keepAlive: true,
    concurrency: 32,
    body: chat('Tell a story in sixty-four words. [sim:words=64]', STREAM),
    expectSuffix: DONE,
    fullOnly: true,
    note: 'Streams per second and CPU per stream under load.',
  },
  {
    id: 'stream-delay5',
    title: 'streaming chat, 64 chunks 5 ms apart, 16 connections',
    stream: true,
    keepAlive: true,
    concurrency: 16,
    body: chat('Tell a story in sixty-four words. [sim:words=64] [sim:delay_ms=5]', STREAM),
    expectSuffix: DONE,
    note: 'A paced stream like a real model: the gateway should add nothing to its total time.',
  },
  {
    id: 'body-100k',
    title: 'unary chat, 100 KB body, keep-alive, 8 connections',
    stream: false,
    keepAlive: true,
    concurrency: 8,
    body: chat('Summarise the conversation in sixteen words. [sim:words=16]', {}, longHistory(100_000)),
    expectSuffix: '}',
    note: 'Parsing and validating a large body (Tollgate prepares it in its worker-thread pool above pools.offload_body_bytes).',
  },
  // Beside chat's unary and stream scenarios, in the same run (before the tokenizer scenario, which must be last).
  ...RESPONSES_SCENARIOS,
  ...MIXED_SCENARIOS,
  {
    id: 'tokenizer',
    title: 'unary chat without supplier usage (local token count), 8 connections',
    stream: false,
    keepAlive: true,
    concurrency: 8,
    body: chat('Say hello in sixteen words. [sim:words=16] [sim:no_usage]'),
    expectSuffix: '}',
    gatewayOnly: true,
    note: 'The supplier reports no usage, so Tollgate counts tokens in its tokenizer threads: the memory of a worker with that pool busy. Run last, because the pool stays.',
  },
];

export const SKIPPED: readonly SkippedScenario[] = [];

export function scenarioById(id: string): Scenario {
  const s = SCENARIOS.find((x) => x.id === id);
  if (s === undefined) throw new Error(`unknown scenario '${id}'; known: ${SCENARIOS.map((x) => x.id).join(', ')}`);
  return s;
}
