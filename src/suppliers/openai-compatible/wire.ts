// OpenAI-compatible suppliers (OpenAI itself, vLLM, Ollama, any server that
// speaks the OpenAI HTTP API): chat completions, responses, embeddings, images.
import type { ProtocolCode, Supplier } from '../../catalog/types.js';
import type { WireAdapter } from '../wire.js';

const PATHS: Partial<Record<ProtocolCode, string>> = {
  chat_completions: '/chat/completions',
  responses: '/responses',
  embeddings: '/embeddings',
  images: '/images/generations',
};

export const openaiCompatible: WireAdapter = {
  path: (protocol) => PATHS[protocol] ?? null,
  headers(supplier: Supplier) {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const credential = supplier.credentialEnv ? process.env[supplier.credentialEnv] : undefined;
    if (credential) headers.authorization = `Bearer ${credential}`;
    return headers;
  },
};
