// The pure request preparers of every surface, by protocol: what the
// worker-thread pool runs for large bodies (workers/prepare-request.ts). Only
// pure modules are imported here (no server, no pipeline, no I/O).
import type { ProtocolCode } from '../catalog/types.js';
import { prepareChat } from './chat/prepare.js';
import { prepareMessages } from './messages/prepare.js';
import type { Prepared } from './surface.js';

export const PREPARERS: Partial<Record<ProtocolCode, (body: unknown, bodyBytes: number) => Prepared>> = {
  chat_completions: prepareChat,
  native_messages: prepareMessages,
};
