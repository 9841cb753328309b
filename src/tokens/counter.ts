// Local token counts, for count_tokens and for the rare settlement the
// supplier reported no usage for. The pool starts lazily: a worker thread with
// tiktoken takes ~0.5 s and ~150 MB, which an HTTP worker should not pay until
// it needs one.
import { join } from 'node:path';
import { Piscina } from 'piscina';
import { packageRoot } from '../config/paths.js';

export class TokenCounter {
  private pool: Piscina | null = null;

  constructor(
    private readonly minThreads: number,
    private readonly maxThreads: number,
  ) {}

  private get workers(): Piscina {
    this.pool ??= new Piscina({
      filename: join(packageRoot, 'dist/workers/count-tokens.js'),
      minThreads: this.minThreads,
      maxThreads: this.maxThreads,
      idleTimeout: 60_000,
    });
    return this.pool;
  }

  /** o200k_base token counts of each text. */
  count(texts: string[]): Promise<number[]> {
    return this.workers.run(texts) as Promise<number[]>;
  }

  async close(): Promise<void> {
    if (this.pool !== null) await this.pool.destroy();
    this.pool = null;
  }
}
