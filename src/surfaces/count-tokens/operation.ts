// POST /v1/messages/count_tokens: a local operation (pipeline/local.ts). The
// estimate is the gateway's own (estimate.ts): no supplier is asked, nothing
// is reserved or charged, no quota is consumed.
import type { LocalOperation } from '../local-operation.js';
import { countTexts, decodeCountTokens, estimateOf, type CountRequest } from './estimate.js';

/** A request the demo catalog answers (README; the registry test sends it with a long text). */
export const countTokensExample = (text: string): object => ({ model: 'quill', messages: [{ role: 'user', content: text }] });

export const countTokensOperation: LocalOperation<CountRequest> = {
  path: '/v1/messages/count_tokens',
  envelope: 'messages',
  carrier: 'bearer_or_x_api_key',
  protocol: 'native_messages',
  modality: 'text_generation',
  decode: decodeCountTokens,
  // A large body: counted by the thread that decoded it, so its text never crosses back.
  inPool: countTexts,
  modelOf: (request) => request.model,
  async compute(request, _model, tools) {
    // A small body's texts are counted in the pool too: even for 200 bytes a
    // hop costs the event loop less than tiktoken inline (bench/micro/count-tokens.ts).
    const counted = request.counted === null ? await countTexts(request, tools.countTokens) : request;
    return `{"input_tokens":${estimateOf(counted)},"estimated":true}`;
  },
};
