// What differs between upstream wire protocols, kept small: where each
// protocol lives under the supplier's base URL, and how the credential is
// presented. Everything else (pools, failover, streaming) is shared.
import type { ProtocolCode, Supplier, WireProtocol } from '../catalog/types.js';
import { anthropicCompatible } from './anthropic-compatible/wire.js';
import { openaiCompatible } from './openai-compatible/wire.js';

export interface WireAdapter {
  /** Path below the base URL (which ends in /v1) for a protocol this wire speaks. */
  path(protocol: ProtocolCode): string | null;
  /** Request headers, credential included (read from the environment, never from config). */
  headers(supplier: Supplier): Record<string, string>;
}

const ADAPTERS: Record<WireProtocol, WireAdapter> = {
  'openai-compatible': openaiCompatible,
  'anthropic-compatible': anthropicCompatible,
};

export function wireFor(protocol: WireProtocol): WireAdapter {
  return ADAPTERS[protocol];
}
