// piscina task: one attempt at a supplier route made from a pool thread, for
// surfaces whose replies are megabytes (embeddings answered as float arrays:
// ~8.4 MB of JSON for 128 × 3072; images: megabytes of base64). Receiving such
// a reply costs the thread that reads it ~16 ms per 8.4 MB as undici receives
// it (docs/performance.md, "The supplier request in the pool
// thread"), and decoding it ~60–130 ms more:
// here none of it runs on the HTTP worker's event loop, which only sends the
// task and writes the rendered answer (its bytes moved back, not copied).
// Failover, the breaker and metrics stay with the dispatcher on the event loop
// (suppliers/dispatch.ts): this task reports what one attempt got.
import { MessagePort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { CallAbort } from '../src/suppliers/abort.js';
import { SupplierConnections, type ConnectionSettings } from '../src/suppliers/connections.js';
import type { ReadReply } from '../src/suppliers/dispatch.js';
import { classify } from '../src/suppliers/failures.js';
import type { ReplyBody } from '../src/suppliers/reply-body.js';
import { recycleBlocks, ReplyTooLarge } from '../src/suppliers/reply-limits.js';
import type { Target } from '../src/suppliers/targets.js';
import { keepSpareAnswers } from '../src/surfaces/answer-bytes.js';
import type { RequestFacts } from '../src/surfaces/surface.js';
import { decodeReplyData, ownBuffers, type Moved } from './decode-reply.js';
import './thread-priority.js';

export interface FetchReplyTask {
  /** The surface's registry name (src/surfaces/index.ts): whose decoder reads the reply. */
  surface: string;
  target: Target;
  body: string;
  meta: RequestFacts;
  settings: ConnectionSettings & { maxReplyBytes: number };
  /** Any message on it aborts the attempt (the client went away); closed by the caller when the task is done. */
  abort: MessagePort;
  /** Answer buffers the HTTP worker has written out (offload/spare-answers.ts), moved here for this thread's next answers. */
  spares?: ArrayBuffer[];
}

export type FetchReplyResult =
  /** No reply: a connect error or timeout (the next route may answer), or another error (null: the call fails). */
  | { answered: false; failure: 'connect' | 'timeout' | null }
  /** `read` null: a 429 or 5xx, its body dropped unread. */
  | { answered: true; statusCode: number; contentType: string; read: ReadReply | null };

/** This thread's connections (the event loop keeps its own); the settings are the process's, the same in every task. */
let connections: SupplierConnections | null = null;

export async function fetchReplyData(task: FetchReplyTask): Promise<FetchReplyResult> {
  if (task.spares !== undefined) keepSpareAnswers(task.spares);
  const abort = new CallAbort();
  task.abort.once('message', () => abort.abort());
  try {
    let res;
    try {
      connections ??= new SupplierConnections(task.settings);
      res = await connections.send(task.target, task.body, abort);
    } catch (err) {
      return { answered: false, failure: abort.aborted ? null : classify(err) };
    }
    const { statusCode, contentType } = res;
    if (statusCode === 429 || statusCode === 529 || statusCode >= 500) {
      await res.body.dump();
      return { answered: true, statusCode, contentType, read: null };
    }
    return { answered: true, statusCode, contentType, read: await readWhole(task, res.body, statusCode) };
  } finally {
    task.abort.close();
  }
}

async function readWhole(task: FetchReplyTask, body: ReplyBody, statusCode: number): Promise<ReadReply> {
  let bytes;
  try {
    bytes = await body.readAll(task.settings.maxReplyBytes);
  } catch (err) {
    return err instanceof ReplyTooLarge ? { read: 'too_large', limit: err.limit } : { read: 'broken' };
  }
  // A refusal's text is never passed on (pipeline/upstream.ts): only its status counts.
  if (statusCode >= 400) return { read: 'whole', ok: false, decoded: null };
  const decoded = decodeReplyData({ surface: task.surface, body: bytes.blocks, meta: task.meta });
  // The blocks are read into a string by now: this thread's next reply reuses them.
  if (bytes.owned) recycleBlocks(bytes.blocks.map((b) => b.buffer as ArrayBuffer));
  return decoded.ok ? { read: 'whole', ok: true, decoded: decoded.decoded } : { read: 'whole', ok: false, decoded: null };
}

/** The result, with the decoded data's own buffers marked for piscina to move (workers/decode-reply.ts, ownBuffers). */
export default async function fetchReply(task: FetchReplyTask): Promise<FetchReplyResult | Moved> {
  const result = await fetchReplyData(task);
  const buffers = result.answered && result.read?.read === 'whole' && result.read.ok ? ownBuffers({ ok: true, decoded: result.read.decoded }) : [];
  if (buffers.length === 0) return result;
  const moved = { [Piscina.transferableSymbol]: buffers, [Piscina.valueSymbol]: result };
  return Piscina.move(moved as unknown as Parameters<typeof Piscina.move>[0]);
}
