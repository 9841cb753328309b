// OpenAI-compatible suppliers (OpenAI itself, vLLM, Ollama, any server that
// speaks the OpenAI HTTP API): chat completions, responses, embeddings, images.
import type { ProtocolCode } from '../../catalog/types.js';
import type { WireAdapter } from '../wire.js';

const PATHS: Partial<Record<ProtocolCode, string>> = {
  chat_completions: '/chat/completions',
  responses: '/responses',
  embeddings: '/embeddings',
  images: '/images/generations',
};

export const openaiCompatible: WireAdapter = {
  protocols: Object.keys(PATHS) as ProtocolCode[],
  path: (protocol) => PATHS[protocol] ?? null,
  headers(credential: string | null) {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    if (credential !== null) headers.authorization = `Bearer ${credential}`;
    return headers;
  },
};
