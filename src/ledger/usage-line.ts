// A usage row as one line of COPY text (store.ts takes a batch's rows this
// way), and back. A worker makes the line once, when it settles the call:
// the same text goes into its books' file (books-file.ts) and, with the rest
// of its batch, to the store, so a call's row is never serialized twice and
// the batch holds one string per call rather than rebuilding them at its
// write (issue 32: the worker's CPU per call).
import { copyField, readCopyField } from '../store/copy-in.js';
import type { Funding } from '../money/money.js';
import type { UsageRow } from './protocol.js';

/** usage_records' columns in the order of a line's fields (store.ts's COPY names them so). */
export const USAGE_COLUMNS =
  'request_id, org_id, key_id, model_id, supplier, surface, funding, input_tokens, cached_input_tokens, output_tokens, ' +
  'image_units, reserved_micros, charged_micros, outcome, metered_source, hold_expired, ttfb_ms, total_ms, finished_at, overdraft_micros, ' +
  'charge_writer';
const FIELDS = 21;

/** `u` as a COPY text-format line (ending in \n), in USAGE_COLUMNS' order; `writer`: its charge's tag (null: no charge). */
export function usageLine(u: UsageRow, writer: string | null): string {
  return (
    `${copyField(u.requestId)}\t${copyField(u.orgId)}\t${copyField(u.keyId)}\t${copyField(u.modelId)}\t${copyField(u.supplier)}\t` +
    `${copyField(u.surface)}\t${copyField(u.funding)}\t${copyField(u.inputTokens)}\t${copyField(u.cachedInputTokens)}\t` +
    `${copyField(u.outputTokens)}\t${copyField(u.imageUnits)}\t${copyField(u.reservedMicros)}\t${copyField(u.chargedMicros)}\t` +
    `${copyField(u.outcome)}\t${copyField(u.meteredSource)}\t${copyField(u.holdExpired)}\t${copyField(u.ttfbMs)}\t` +
    `${copyField(u.totalMs)}\t${timestampField(u.finishedAt)}\t${copyField(u.overdraftMicros)}\t${copyField(writer)}\n`
  );
}

/** The second of the last timestamp written, and its text up to the milliseconds ("2026-11-27T17:24:48."). */
let lastSecond = NaN;
let lastSecondText = '';

/**
 * ms since epoch as timestamptz text, as Date.toISOString writes it; null
 * (refused: the column is NOT NULL) when it is not a date, as
 * to_timestamp(null) in the store's statement. The rows of a batch share
 * their second: its text is made once, not a Date per row.
 */
export function timestampField(ms: number): string {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || Math.abs(ms) > 8.64e15) return '\\N';
  if (!Number.isInteger(ms)) return new Date(ms).toISOString();
  const second = Math.floor(ms / 1000);
  if (second !== lastSecond) {
    lastSecondText = new Date(second * 1000).toISOString().slice(0, -4);
    lastSecond = second;
  }
  const milli = ms - second * 1000;
  return lastSecondText + (milli < 10 ? '00' : milli < 100 ? '0' : '') + milli + 'Z';
}

/**
 * A line usageLine made (without its \n) read back: the row and its charge's
 * tag, or null when it has not the line's 21 fields. A field the store would
 * refuse (a fraction of a token, not a date) reads back as a value the store
 * refuses alike, so a replayed row meets the fate its first write met.
 */
export function readUsageLine(line: string): { usage: UsageRow; writer: string | null } | null {
  const f = line.split('\t');
  if (f.length !== FIELDS) return null;
  const text = (k: number): string | null => readCopyField(f[k]!);
  const num = (k: number): number => {
    const v = text(k);
    return v === null ? NaN : Number(v);
  };
  const ttfb = text(16);
  const finished = text(18);
  const usage: UsageRow = {
    requestId: text(0) ?? '',
    orgId: text(1) ?? '',
    keyId: text(2) ?? '',
    modelId: text(3) ?? '',
    supplier: text(4),
    surface: text(5) ?? '',
    funding: (text(6) ?? '') as Funding,
    inputTokens: num(7),
    cachedInputTokens: num(8),
    outputTokens: num(9),
    imageUnits: num(10),
    reservedMicros: num(11),
    chargedMicros: num(12),
    outcome: text(13) ?? '',
    meteredSource: text(14),
    holdExpired: text(15) === 't',
    ttfbMs: ttfb === null ? null : Number(ttfb),
    totalMs: num(17),
    finishedAt: finished === null ? NaN : Date.parse(finished),
    overdraftMicros: num(19),
  };
  return { usage, writer: text(20) };
}
