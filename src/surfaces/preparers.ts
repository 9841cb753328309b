// The pure request preparers of every surface, by protocol: what the
// worker-thread pool runs for large bodies (workers/prepare-request.ts). Only
// pure modules are imported here (no server, no pipeline, no I/O).
import type { ProtocolCode } from '../catalog/types.js';
import { prepareChat } from './chat/prepare.js';
import { prepareMessages } from './messages/prepare.js';
import { prepareResponses } from './responses/prepare.js';
import { prepareEmbeddings } from './embeddings/prepare.js';
import { decodeReply as decodeEmbeddingsReply } from './embeddings/reply.js';
import { prepareImages } from './images/prepare.js';
import { countTokensOperation } from './count-tokens/operation.js';
import type { LocalOperation } from './local-operation.js';
import type { Prepared } from './surface.js';

export const PREPARERS: Partial<Record<ProtocolCode, (body: unknown, bodyBytes: number) => Prepared>> = {
  chat_completions: prepareChat,
  native_messages: prepareMessages,
  responses: prepareResponses,
  embeddings: prepareEmbeddings,
  images: prepareImages,
};

/** The pure reply decoders of the surfaces with `replyInPool` (surface.ts), by protocol: what workers/decode-reply.ts runs for large supplier replies. */
export const REPLY_DECODERS: Partial<Record<ProtocolCode, (upstream: unknown) => unknown>> = {
  embeddings: decodeEmbeddingsReply,
};

/** The local operations (pipeline/local.ts), by name: whose decode (and inPool) workers/decode-local.ts runs for large bodies. */
export const LOCAL_OPERATIONS: Record<string, LocalOperation<any>> = {
  count_tokens: countTokensOperation,
};
