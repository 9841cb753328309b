// The worker-thread pool of an HTTP worker (piscina): CPU-heavy work that
// measurement shows is worth a hop — token counting (tiktoken, ~200 µs/KB),
// preparing large request bodies, decoding large supplier replies — and, in a
// second pool of its own, the supplier requests of surfaces whose replies are
// megabytes (fetchTransport). With pools.piscina_min_threads 0 it starts
// lazily (a thread costs ~0.3–0.6 s and memory); above 0 the CPU pool starts
// with the worker and its first thread loads the task files and the tokenizer
// at once (workers/warm-up.ts), so no call waits for a cold thread (issue 38
// item 2). Otherwise each task file is loaded by a thread on its first task
// of that kind.
// Every task names its owner (the calling organization): each pool is
// entered through a FairShare, so one organization cannot fill it.
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
import { FairShare } from './fair-share.js';
import { SpareAnswers } from './spare-answers.js';

const COUNT_TOKENS = join(packageRoot, 'dist/workers/count-tokens.js');
const PREPARE_REQUEST = join(packageRoot, 'dist/workers/prepare-request.js');
const DECODE_LOCAL = join(packageRoot, 'dist/workers/decode-local.js');
const DECODE_REPLY = join(packageRoot, 'dist/workers/decode-reply.js');
const FETCH_REPLY = join(packageRoot, 'dist/workers/fetch-reply.js');
const WARM_UP = join(packageRoot, 'dist/workers/warm-up.js');

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

/**
 * A pool thread's young generation: 6 MB (2 MB semi-spaces), whatever the
 * HTTP worker's own (memory.semi_space_mb, a process-wide V8 flag that the
 * threads would otherwise share). Measured (docs/performance.md, "The
 * worker's young generation"): the worker's 8 MB semi-spaces cut its CPU per
 * call; the same in the threads bought 100 KB bodies nothing beyond noise
 * (the threads' CPU per body 403 against 396 µs) and cost 9 MB more in all.
 */
const POOL_THREAD_LIMITS = { maxYoungGenerationSizeMb: 6 };

/** A supplier request withdrawn while it waited for its share of the fetch pool (its client left): no supplier saw it. */
export class WithdrawnFromPool extends CallAborted {}

/** piscina's run options, as the pool's methods pass them. */
type RunOptions = NonNullable<Parameters<Piscina['run']>[1]>;

export class OffloadPool {
  private pool: Piscina | null = null;
  private fetchPool: Piscina | null = null;
  private closing = false;
  /** Who may enter each pool now: one CPU task per thread, FETCHES_PER_THREAD fetches per thread. */
  readonly cpuShare: FairShare;
  readonly fetchShare: FairShare;
  /** Written answers' buffers on their way back to the fetch threads (spare-answers.ts). */
  readonly spareAnswers = new SpareAnswers();
  /** Resolves true once the warm thread has loaded the task files and the tokenizer (false at once when none is kept warm, or when it failed); never rejects. */
  readonly warm: Promise<boolean>;

  constructor(
    private readonly minThreads: number,
    private readonly maxThreads: number,
    /** Bodies prepared here nest at most this deep (http.max_json_depth); the task checks before it parses. */
    private readonly maxJsonDepth: number,
    /** A thread that fails outside a task (a task file that cannot load): without a listener piscina's 'error' would crash the HTTP worker. */
    private readonly onThreadError: (err: unknown) => void = () => {},
    /** How much lower the threads run than this one (pools.piscina_nice, a nice increment): 0 = the event loop's priority; workers/thread-priority.ts applies it. */
    private readonly nice = 0,
  ) {
    this.cpuShare = new FairShare(maxThreads);
    this.fetchShare = new FairShare(maxThreads * FETCHES_PER_THREAD);
    // A count or a large body must not wait for a thread to start and load its code and o200k: 1–3 s under load (issue 38 item 2).
    this.warm =
      minThreads > 0
        ? this.run('', null, { filename: WARM_UP }).then(
            () => true,
            (err) => {
              if (!this.closing) onThreadError(err);
              return false;
            },
          )
        : Promise.resolve(false);
  }

  private get threads(): Piscina {
    if (this.pool === null) {
      this.pool = new Piscina({
        filename: COUNT_TOKENS,
        minThreads: this.minThreads,
        maxThreads: this.maxThreads,
        idleTimeout: 60_000,
        workerData: { nice: this.nice },
        resourceLimits: POOL_THREAD_LIMITS,
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
        resourceLimits: POOL_THREAD_LIMITS,
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
  fetchTransport(surface: string, meta: RequestFacts, owner = ''): Transport | null {
    if (REPLIES_INLINE) return null;
    return (target, body, abort, settings) => this.fetchReply(surface, meta, owner, target, body, abort, settings);
  }

  /** One attempt in a fetch thread, within `owner`'s share of the fetch pool (a client that leaves while it waits withdraws it). */
  private async fetchReply(surface: string, meta: RequestFacts, owner: string, ...[target, body, abort, settings]: Parameters<Transport>): Promise<Answered> {
    if (abort.aborted) throw new CallAborted();
    if (!this.fetchShare.tryEnter(owner)) await this.fetchShare.wait(owner, (withdraw) => abort.listen(() => withdraw(new WithdrawnFromPool())));
    try {
      return await this.fetchOne(surface, meta, target, body, abort, settings);
    } finally {
      this.fetchShare.leave(owner);
    }
  }

  private async fetchOne(surface: string, meta: RequestFacts, ...[target, body, abort, settings]: Parameters<Transport>): Promise<Answered> {
    if (abort.aborted) throw new CallAborted();
    // The abort crosses on a port of its own: piscina's own abort would end the whole thread, and with it the other requests it carries.
    const { port1, port2 } = new MessageChannel();
    const onAbort = (): void => port1.postMessage(0);
    abort.listen(onAbort);
    let result: FetchReplyResult;
    try {
      const { connectTimeoutMs, headersTimeoutMs, bodyTimeoutMs, connectionsPerOrigin, maxReplyBytes } = settings;
      // Written answers' buffers ride along, moved: the thread writes its next answers into them (surfaces/answer-bytes.ts).
      const spares = this.spareAnswers.take();
      const task = { surface, target, body, meta, settings: { connectTimeoutMs, headersTimeoutMs, bodyTimeoutMs, connectionsPerOrigin, maxReplyBytes }, abort: port2, spares };
      result = (await this.fetchThreads.run(task, { filename: FETCH_REPLY, transferList: [port2, ...spares] })) as FetchReplyResult;
    } finally {
      abort.unlisten(onAbort);
      port1.close();
    }
    if (!result.answered) {
      if (result.failure !== null) throw new AttemptFailed(result.failure);
      throw abort.aborted ? new CallAborted() : new Error('supplier attempt failed in the fetch thread');
    }
    if (result.read?.read === 'whole' && result.read.ok) this.spareAnswers.received(result.read.decoded);
    return { statusCode: result.statusCode, contentType: result.contentType, body: null, read: result.read };
  }

  /** The answer rendered from a reply decoded in a thread is written whole: its buffers go back to the fetch threads. */
  answerWritten(decoded: unknown): void {
    this.spareAnswers.written(decoded);
  }

  /** A CPU task in a thread, within `owner`'s share of the pool (its turn among the owners waiting). */
  private async run(owner: string, task: unknown, options: RunOptions): Promise<unknown> {
    if (!this.cpuShare.tryEnter(owner)) await this.cpuShare.wait(owner);
    try {
      return await this.threads.run(task, options);
    } finally {
      this.cpuShare.leave(owner);
    }
  }

  /** o200k_base token counts of each text. `owner`: the organization it is for (the pool's fair share; '' = none). */
  countTokens(texts: string[], owner = ''): Promise<number[]> {
    return this.run(owner, texts, { filename: COUNT_TOKENS }) as Promise<number[]>;
  }

  /**
   * Parses, validates and prepares a body in a thread. The bytes are moved,
   * not copied: `body` is unusable afterwards.
   */
  prepare(surface: string, body: Buffer, owner = ''): Promise<PrepareResult> {
    // Only a buffer that owns its whole ArrayBuffer can be moved; a slice of a shared one is copied first.
    const bytes = movable(body);
    // transferList, not Piscina.move(): move() is only unwrapped when it is the whole task.
    return this.run(owner, { surface, body: bytes, maxDepth: this.maxJsonDepth }, { filename: PREPARE_REQUEST, transferList: [bytes.buffer as ArrayBuffer] }) as Promise<PrepareResult>;
  }

  /** Parses and decodes a local operation's body in a thread (count_tokens); the bytes are moved, as in prepare(). */
  decodeLocal(operation: string, body: Buffer, owner = ''): Promise<DecodeResult<unknown>> {
    const bytes = movable(body);
    return this.run(owner, { operation, body: bytes, maxDepth: this.maxJsonDepth }, { filename: DECODE_LOCAL, transferList: [bytes.buffer as ArrayBuffer] }) as Promise<DecodeResult<unknown>>;
  }

  /**
   * Parses and decodes a large supplier reply in a thread (surface.ts,
   * replyPoolBytes). Its blocks are moved, not copied, when they own their
   * buffers (reply-limits.ts); otherwise joined into one that does. The
   * decoded data's own byte members come back moved too (workers/decode-reply.ts).
   */
  decodeReply(surface: string, reply: ReplyBytes | Buffer, meta: RequestFacts, owner = ''): Promise<DecodeReplyResult> {
    const blocks = reply instanceof Uint8Array ? [movable(reply)] : reply.owned ? reply.blocks : [movable(Buffer.concat(reply.blocks, reply.length))];
    if (REPLIES_INLINE) return decodeReplyInline(surface, blocks, meta);
    const decoded = this.run(owner, { surface, body: blocks, meta }, { filename: DECODE_REPLY, transferList: blocks.map((b) => b.buffer as ArrayBuffer) }) as Promise<DecodeReplyResult>;
    return decoded.then((result) => {
      if (result.ok) this.spareAnswers.received(result.decoded);
      return result;
    });
  }

  async close(): Promise<void> {
    this.closing = true;
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
