// The pure request preparers of every surface, by protocol: what the
// worker-thread pool runs for large bodies (workers/prepare-request.ts). Only
// pure modules are imported here (no server, no pipeline, no I/O).
import type { ProtocolCode } from '../catalog/types.js';
import { prepareChat } from './chat/prepare.js';
import { prepareMessages } from './messages/prepare.js';
import { decodeCountTokens } from './count-tokens/estimate.js';
import type { Prepared } from './surface.js';

export const PREPARERS: Partial<Record<ProtocolCode, (body: unknown, bodyBytes: number) => Prepared>> = {
  chat_completions: prepareChat,
  native_messages: prepareMessages,
};

/** The pure decoders of the local operations (pipeline/local.ts), by operation name: what workers/decode-local.ts runs. */
export const LOCAL_DECODERS: Record<string, (body: unknown, bodyBytes: number) => unknown> = {
  count_tokens: decodeCountTokens,
};
