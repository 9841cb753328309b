// What a `tollgate` subcommand is, and what it is given to run. Commands are
// listed in cli/commands.ts (the one registration point).
import type { Topic } from '../../bus/bus.js';
import type { Config } from '../../config/types.js';
import type { Pool } from '../../store/pool.js';

export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  /** One line for the usage text. */
  help: string;
}

export type OptionValues = Record<string, string | boolean | undefined>;

/** The store a command works on; opened only when a command asks for it. */
export interface CliStore {
  pool: Pool;
  /**
   * Change notification, where a bus is reachable (DATABASE_URL: LISTEN/NOTIFY
   * reaches every instance); null otherwise. Workers also poll the key change
   * log and the catalog revision, so nothing is lost without it.
   */
  publish: ((topic: Topic, payload: string) => Promise<void>) | null;
  /** Where the store is, for messages. */
  where: string;
  close(): Promise<void>;
}

export interface CliContext {
  /** The gateway's settings, as it would load them from this environment. */
  config(): Config;
  store(): Promise<CliStore>;
  /** Standard output: results, and the one-time secret. */
  out(text: string): void;
  /** Standard error: notes and errors. */
  err(text: string): void;
}

export interface Command {
  /** The words after `tollgate`, e.g. ['keys', 'create'] or ['credit']. */
  path: string[];
  /** Positional arguments, for the usage line, e.g. '<org_id>'. */
  args: string;
  summary: string;
  options: Record<string, OptionSpec>;
  run(positionals: string[], values: OptionValues, ctx: CliContext): Promise<void>;
}

/** A wrong invocation: printed with the command's usage, exit status 2. */
export class UsageError extends Error {}

/** Comma-separated flag values → list ('a, b' → ['a', 'b']). */
export function list(value: string | boolean | undefined): string[] | undefined {
  if (typeof value !== 'string') return undefined;
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

export function printJson(ctx: CliContext, value: unknown): void {
  ctx.out(JSON.stringify(value, null, 2) + '\n');
}

/** Rows of cells → aligned columns. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}
