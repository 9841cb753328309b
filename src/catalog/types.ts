// The catalog as the code holds it in memory.

export type ProtocolCode = 'responses' | 'chat_completions' | 'native_messages' | 'embeddings' | 'images';
export type ModalityCode = 'text_generation' | 'embeddings' | 'image_generation';
export type WireProtocol = 'openai-compatible' | 'anthropic-compatible';

export const PROTOCOL_CODES: readonly ProtocolCode[] = ['responses', 'chat_completions', 'native_messages', 'embeddings', 'images'];

export interface Capability {
  modality_code: ModalityCode;
  protocol_code: ProtocolCode;
  status: string;
  streaming_status: string;
  strict_semantics_status: string;
  structured_output_mode: string;
  structured_output_status: string;
  structured_output_streaming_status: string;
  tools_status: string;
}

export interface Supplier {
  id: string;
  name: string;
  wireProtocol: WireProtocol;
  /** Resolved base URL, ending in /v1 */
  baseUrl: string;
  /** Name of the environment variable holding the credential (never the credential). */
  credentialEnv: string | null;
  protocols: ProtocolCode[];
}

export interface Route {
  supplier: Supplier;
  upstreamModel: string;
  priority: number;
}

/** Integer micros (millionths of the account currency). */
export interface Price {
  inputPerMtok: number;
  cachedInputPerMtok: number;
  outputPerMtok: number;
  imageUnit: number;
}

export interface Vendor {
  id: string;
  code: string;
  display_name_en: string;
  display_name_ru: string;
}

/** A model as the pipeline sees it: only what is published and routable. */
export interface CatalogModel {
  modelId: string;
  canonicalName: string;
  vendor: Vendor;
  modalityCodes: ModalityCode[];
  maxOutputTokens: number | null;
  contextWindowTokens: number | null;
  price: Price;
  /** Per routable protocol: its capability tuple and routes in priority order. */
  protocols: Map<ProtocolCode, { capability: Capability; routes: Route[] }>;
}
