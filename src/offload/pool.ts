// The worker-thread pool of an HTTP worker (piscina): CPU-heavy work that
// measurement shows is worth a hop — token counting (tiktoken, ~200 µs/KB),
// preparing large request bodies, decoding large supplier replies — and, in a
// second pool of its own, the supplier requests of surfaces whose replies are
// megabytes (fetchTransport). It starts lazily: a thread costs
// ~0.3–0.6 s and tens of MB, which an HTTP worker should not pay until it
// needs one. Each task file is loaded by a thread on its first task of that
// kind, so preparing bodies never loads the tokenizer.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { packageRoot } from '../config/paths.js';
import { CallAborted } from '../suppliers/abort.js';
import type { Answered, Transport } from '../suppliers/dispatch.js';
import { AttemptFailed } from '../suppliers/failures.js';
import type { ReplyBytes } from '../suppliers/reply-limits.js';
import type { DecodeResult } from '../surfaces/local-operation.js';
import type { DecodeReplyResult, PrepareResult, RequestFacts } from '../surfaces/surface.js';
import type { FetchReplyResult } from '../../workers/fetch-reply.js';

const COUNT_TOKENS = join(packageRoot, 'dist/workers/count-tokens.js');
const PREPARE_REQUEST = join(packageRoot, 'dist/workers/prepare-request.js');
const DECODE_LOCAL = join(packageRoot, 'dist/workers/decode-local.js');
const DECODE_REPLY = join(packageRoot, 'dist/workers/decode-reply.js');
const FETCH_REPLY = join(packageRoot, 'dist/workers/fetch-reply.js');

/**
 * Supplier requests in flight at once on one fetch thread. They mostly wait
 * for the supplier (undici queues past suppliers.connections_per_origin), and
 * each holds at most suppliers.max_reply_bytes while its reply arrives; the
 * thread decodes one reply at a time whatever this is.
 */
const FETCHES_PER_THREAD = 32;

/**
 * The body's bytes in an ArrayBuffer of their own, which can be moved to a
 * thread. A small Buffer is a slice of Node's shared 8 KB slab (byteOffset
 * ≠ 0), and so is a Buffer.from() copy of it: only allocUnsafeSlow gives a
 * buffer of its own. Moving the slab itself would hand the thread whatever
 * else it holds (another request's bytes) at offset 0.
 */
function movable(body: Buffer): Uint8Array {
  if (body.byteOffset === 0 && body.buffer.byteLength === body.byteLength) return new Uint8Array(body.buffer, 0, body.byteLength);
  const own = Buffer.allocUnsafeSlow(body.byteLength);
  body.copy(own);
  return new Uint8Array(own.buffer, 0, own.byteLength);
}

/**
 * Bench only (`npm run bench -- --targets tollgate-inline`): supplier replies
 * are decoded on the event loop instead of in a thread, by the same task
 * function, so the bench can show what the pool costs and buys per request.
 */
const REPLIES_INLINE = process.env.TOLLGATE_BENCH_EMBEDDINGS_INLINE === '1';

export class OffloadPool {
  private pool: Piscina | null = null;
  private fetchPool: Piscina | null = null;

  constructor(
    private readonly minThreads: number,
    private readonly maxThreads: number,
    /** Bodies prepared here nest at most this deep (http.max_json_depth); the task checks before it parses. */
    private readonly maxJsonDepth: number,
    /** A thread that fails outside a task (a task file that cannot load): without a listener piscina's 'error' would crash the HTTP worker. */
    private readonly onThreadError: (err: unknown) => void = () => {},
    /** How much lower the threads run than this one (pools.piscina_nice, a nice increment): 0 = the event loop's priority; workers/thread-priority.ts applies it. */
    private readonly nice = 0,
  ) {}

  private get threads(): Piscina {
    if (this.pool === null) {
      this.pool = new Piscina({
        filename: COUNT_TOKENS,
        minThreads: this.minThreads,
        maxThreads: this.maxThreads,
        idleTimeout: 60_000,
        workerData: { nice: this.nice },
      });
      // Once, when the pool is made: on every access it added a listener per task (MaxListenersExceededWarning in bench/micro/image-reply.ts).
      this.pool.on('error', this.onThreadError);
    }
    return this.pool;
  }

  /**
   * Supplier requests, one per task, many at once per thread: a pool apart
   * from the CPU tasks' so that a slow supplier never holds a thread that
   * count_tokens or a large body is waiting for.
   */
  private get fetchThreads(): Piscina {
    if (this.fetchPool === null) {
      this.fetchPool = new Piscina({
        filename: FETCH_REPLY,
        minThreads: 0,
        maxThreads: this.maxThreads,
        concurrentTasksPerWorker: FETCHES_PER_THREAD,
        // Between tasks the thread's event loop keeps running (piscina's default parks an idle thread in
        // Atomics.wait, which stops its sockets too). With the default, attempts failed with "other side closed"
        // on a keep-alive connection the simulator had closed: 4 in ~600 embeddings calls in rounds with idle
        // gaps, against 0 in 343 with this setting; what exactly races was not pinned down.
        atomics: 'disabled',
        idleTimeout: 60_000,
        workerData: { nice: this.nice },
      });
      this.fetchPool.on('error', this.onThreadError);
    }
    return this.fetchPool;
  }

  /**
   * The transport for a surface whose replies are megabytes (surface.ts,
   * fetchInPool): a pool thread makes each attempt and reads and decodes the
   * reply, so the event loop neither receives nor parses it (~16 ms and
   * ~60–130 ms per 128 × 3072 float embeddings reply). Null under the bench's
   * inline switch: the event loop does it all, to show what the pool buys.
   */
  fetchTransport(surface: string, meta: RequestFacts): Transport | null {
    if (REPLIES_INLINE) return null;
    return (target, body, abort, settings) => this.fetchReply(surface, meta, target, body, abort, settings);
  }

  private async fetchReply(surface: string, meta: RequestFacts, ...[target, body, abort, settings]: Parameters<Transport>): Promise<Answered> {
    if (abort.aborted) throw new CallAborted();
    // The abort crosses on a port of its own: piscina's own abort would end the whole thread, and with it the other requests it carries.
    const { port1, port2 } = new MessageChannel();
    const onAbort = (): void => port1.postMessage(0);
    abort.listen(onAbort);
    let result: FetchReplyResult;
    try {
      const { connectTimeoutMs, headersTimeoutMs, bodyTimeoutMs, connectionsPerOrigin, maxReplyBytes } = settings;
      const task = { surface, target, body, meta, settings: { connectTimeoutMs, headersTimeoutMs, bodyTimeoutMs, connectionsPerOrigin, maxReplyBytes }, abort: port2 };
      result = (await this.fetchThreads.run(task, { filename: FETCH_REPLY, transferList: [port2] })) as FetchReplyResult;
    } finally {
      abort.unlisten(onAbort);
      port1.close();
    }
    if (!result.answered) {
      if (result.failure !== null) throw new AttemptFailed(result.failure);
      throw abort.aborted ? new CallAborted() : new Error('supplier attempt failed in the fetch thread');
    }
    return { statusCode: result.statusCode, contentType: result.contentType, body: null, read: result.read };
  }

  /** o200k_base token counts of each text. */
  countTokens(texts: string[]): Promise<number[]> {
    return this.threads.run(texts, { filename: COUNT_TOKENS }) as Promise<number[]>;
  }

  /**
   * Parses, validates and prepares a body in a thread. The bytes are moved,
   * not copied: `body` is unusable afterwards.
   */
  prepare(surface: string, body: Buffer): Promise<PrepareResult> {
    // Only a buffer that owns its whole ArrayBuffer can be moved; a slice of a shared one is copied first.
    const bytes = movable(body);
    // transferList, not Piscina.move(): move() is only unwrapped when it is the whole task.
    return this.threads.run({ surface, body: bytes, maxDepth: this.maxJsonDepth }, { filename: PREPARE_REQUEST, transferList: [bytes.buffer as ArrayBuffer] }) as Promise<PrepareResult>;
  }

  /** Parses and decodes a local operation's body in a thread (count_tokens); the bytes are moved, as in prepare(). */
  decodeLocal(operation: string, body: Buffer): Promise<DecodeResult<unknown>> {
    const bytes = movable(body);
    return this.threads.run({ operation, body: bytes, maxDepth: this.maxJsonDepth }, { filename: DECODE_LOCAL, transferList: [bytes.buffer as ArrayBuffer] }) as Promise<DecodeResult<unknown>>;
  }

  /**
   * Parses and decodes a large supplier reply in a thread (surface.ts,
   * replyPoolBytes). Its blocks are moved, not copied, when they own their
   * buffers (reply-limits.ts); otherwise joined into one that does. The
   * decoded data's own byte members come back moved too (workers/decode-reply.ts).
   */
  decodeReply(surface: string, reply: ReplyBytes | Buffer, meta: RequestFacts): Promise<DecodeReplyResult> {
    const blocks = reply instanceof Uint8Array ? [movable(reply)] : reply.owned ? reply.blocks : [movable(Buffer.concat(reply.blocks, reply.length))];
    if (REPLIES_INLINE) return decodeReplyInline(surface, blocks, meta);
    return this.threads.run({ surface, body: blocks, meta }, { filename: DECODE_REPLY, transferList: blocks.map((b) => b.buffer as ArrayBuffer) }) as Promise<DecodeReplyResult>;
  }

  async close(): Promise<void> {
    await Promise.all([this.pool?.destroy(), this.fetchPool?.destroy()]);
    this.pool = null;
    this.fetchPool = null;
  }
}

/** The pool's reply task run on the calling thread (REPLIES_INLINE); loaded on first use, by path, as the pool loads it. */
async function decodeReplyInline(surface: string, blocks: Uint8Array[], meta: RequestFacts): Promise<DecodeReplyResult> {
  const task = (await import(pathToFileURL(DECODE_REPLY).href)) as { decodeReplyData: (t: { surface: string; body: Uint8Array[]; meta: RequestFacts }) => DecodeReplyResult };
  return task.decodeReplyData({ surface, body: blocks, meta });
}
