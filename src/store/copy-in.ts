// COPY … FROM STDIN through a pg client, without a stream: a query (simple
// protocol, so it may hold several statements) whose COPY statements each
// take the next of the given chunks of text-format rows. The ledger's
// journal writes its batches this way (ledger/store.ts): PostgreSQL takes rows
// by COPY for 55–65% of the CPU an INSERT … SELECT from a JSON document costs
// it (docs/performance.md, "The journal's write by COPY").
import type pg from 'pg';

/** The pg Submittable protocol (pg's own Query implements the same handlers). */
class CopyInQuery {
  private next = 0;
  private error: Error | null = null;
  private settled = false;

  constructor(
    readonly text: string,
    private readonly chunks: readonly Buffer[],
    private readonly done: (err: Error | null) => void,
  ) {}

  /** Set by pg's client when it wraps the callback with its query timeout; called once here either way. */
  callback = (err: Error | null): void => {
    if (this.settled) return;
    this.settled = true;
    this.done(err);
  };

  submit(connection: pg.Connection): void {
    (connection as unknown as { query(text: string): void }).query(this.text);
  }

  handleCopyInResponse(connection: pg.Connection): void {
    const c = connection as unknown as { sendCopyFromChunk(b: Buffer): void; endCopyFrom(): void; sendCopyFail(msg: string): void };
    const chunk = this.chunks[this.next++];
    // More COPY statements than chunks is a bug here, not a row to store: fail the statement, never send nothing as if it were data.
    if (chunk === undefined) return c.sendCopyFail('no rows for this COPY');
    c.sendCopyFromChunk(chunk);
    c.endCopyFrom();
  }

  /** The server refused something (the rest of the query is skipped), or the connection failed: answered now, as pg's Query does. */
  handleError(err: Error): void {
    this.error ??= err;
    this.callback(err);
  }

  handleReadyForQuery(): void {
    this.callback(this.error);
  }

  handleCommandComplete(): void {}
  handleEmptyQuery(): void {}
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handlePortalSuspended(): void {}
  handleCopyData(): void {}
}

/** Runs `text` on `client`, its COPY … FROM STDIN statements taking `chunks` in order. */
export function copyIn(client: pg.PoolClient, text: string, chunks: readonly Buffer[]): Promise<void> {
  return new Promise((resolve, reject) => {
    client.query(new CopyInQuery(text, chunks, (err) => (err === null ? resolve() : reject(err))));
  });
}

/**
 * One field of a COPY text-format row: \N for null (or absent); backslash, tab, newline
 * and carriage return escaped (the characters that would end or split a
 * field). Lone surrogates become U+FFFD when the row is encoded as UTF-8, as
 * pg's text parameters write them.
 */
export function copyField(value: unknown): string {
  if (typeof value === 'string') return NEEDS_ESCAPE.test(value) ? value.replace(ESCAPED, escapeChar) : value;
  if (typeof value === 'number') return String(value); // NaN or a fraction in an integer column: refused by the server as bad data
  if (typeof value === 'boolean') return value ? 't' : 'f';
  if (value === null || value === undefined) return '\\N';
  // Not a row's value (a bug upstream): stored as its JSON text, as json_to_recordset would take it, never thrown here.
  return copyField(JSON.stringify(value));
}

/** A field copyField wrote, read back: null for \N, its escapes undone. */
export function readCopyField(field: string): string | null {
  if (field === '\\N') return null;
  return field.includes('\\') ? field.replace(ESCAPE, unescapeChar) : field;
}

const NEEDS_ESCAPE = /[\\\t\n\r]/;
const ESCAPED = /[\\\t\n\r]/g;
const ESCAPE = /\\(.)/g;
const unescapeChar = (_: string, c: string): string => (c === 't' ? '\t' : c === 'n' ? '\n' : c === 'r' ? '\r' : c);
const escapeChar = (c: string): string => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r');
