// The one internal error value. Thrown or returned anywhere in the pipeline;
// an envelope writer turns it into the surface's wire shape.
import { CATALOGUE, type ErrorClass, type ErrorCode } from './catalogue.js';

export interface FieldDetail {
  field: string;
  issue: string;
}

export interface LimitDetail {
  kind: string;
  [key: string]: unknown;
}

export interface ErrorExtras {
  param?: string;
  fieldDetails?: FieldDetail[];
  limit?: LimitDetail;
  retryAfterSeconds?: number;
  /** What is wrong, naming the member and the rule, in place of the code's general sentence (never a secret or another organization's data). */
  message?: string;
}

/** How many field details a message states; the rest are in field_details. */
const MESSAGE_DETAILS = 3;

/**
 * A refusal with field details says them in its message, "member: rule."
 * (several joined by "; "), so a client that shows only the message (the
 * `tollgate` command, the console, an SDK) shows what to fix. A detail's
 * issue states the rule and its limit, never the value the caller sent.
 */
function fieldMessage(details: readonly FieldDetail[]): string {
  const stated = details.slice(0, MESSAGE_DETAILS).map((d) => `${d.field}: ${d.issue}`).join('; ');
  const more = details.length - MESSAGE_DETAILS;
  return more > 0 ? `${stated}; and ${more} more (see field_details).` : `${stated}.`;
}

export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: ErrorClass;
  readonly param: string | null;
  readonly fieldDetails: FieldDetail[] | null;
  readonly limit: LimitDetail | null;
  readonly retryAfterSeconds: number | null;

  constructor(code: ErrorCode, extras: ErrorExtras = {}) {
    const entry = CATALOGUE[code];
    const details = extras.fieldDetails ?? null;
    super(extras.message ?? (details !== null && details.length > 0 ? fieldMessage(details) : entry.message));
    this.name = 'GatewayError';
    this.code = code;
    this.status = entry.status;
    this.type = entry.type;
    this.param = extras.param ?? null;
    this.fieldDetails = details;
    this.limit = extras.limit ?? null;
    this.retryAfterSeconds = extras.retryAfterSeconds ?? null;
  }
}

/** Anything thrown that is not a GatewayError is an internal error to the caller. */
export function asGatewayError(err: unknown): GatewayError {
  return err instanceof GatewayError ? err : new GatewayError('internal_error');
}
