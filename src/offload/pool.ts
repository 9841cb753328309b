// The worker-thread pool of an HTTP worker (piscina): CPU-heavy work that
// measurement shows is worth a hop — token counting (tiktoken, ~200 µs/KB)
// and preparing large request bodies. It starts lazily: a thread costs
// ~0.3–0.6 s and tens of MB, which an HTTP worker should not pay until it
// needs one. Each task file is loaded by a thread on its first task of that
// kind, so preparing bodies never loads the tokenizer.
import { join } from 'node:path';
import { Piscina } from 'piscina';
import type { ProtocolCode } from '../catalog/types.js';
import { packageRoot } from '../config/paths.js';
import type { PrepareResult } from '../surfaces/surface.js';

const COUNT_TOKENS = join(packageRoot, 'dist/workers/count-tokens.js');
const PREPARE_REQUEST = join(packageRoot, 'dist/workers/prepare-request.js');

export class OffloadPool {
  private pool: Piscina | null = null;

  constructor(
    private readonly minThreads: number,
    private readonly maxThreads: number,
    /** Bodies prepared here nest at most this deep (http.max_json_depth); the task checks before it parses. */
    private readonly maxJsonDepth: number,
  ) {}

  private get threads(): Piscina {
    this.pool ??= new Piscina({
      filename: COUNT_TOKENS,
      minThreads: this.minThreads,
      maxThreads: this.maxThreads,
      idleTimeout: 60_000,
    });
    return this.pool;
  }

  /** o200k_base token counts of each text. */
  countTokens(texts: string[]): Promise<number[]> {
    return this.threads.run(texts, { filename: COUNT_TOKENS }) as Promise<number[]>;
  }

  /**
   * Parses, validates and prepares a body in a thread. The bytes are moved,
   * not copied: `body` is unusable afterwards.
   */
  prepare(protocol: ProtocolCode, body: Buffer): Promise<PrepareResult> {
    // Only a buffer that owns its whole ArrayBuffer can be moved; a slice of a shared one is copied first.
    const owned = body.byteOffset === 0 && body.buffer.byteLength === body.byteLength ? body : Buffer.from(body);
    const bytes = new Uint8Array(owned.buffer, 0, owned.byteLength);
    // transferList, not Piscina.move(): move() is only unwrapped when it is the whole task.
    return this.threads.run({ protocol, body: bytes, maxDepth: this.maxJsonDepth }, { filename: PREPARE_REQUEST, transferList: [owned.buffer as ArrayBuffer] }) as Promise<PrepareResult>;
  }

  async close(): Promise<void> {
    if (this.pool !== null) await this.pool.destroy();
    this.pool = null;
  }
}
