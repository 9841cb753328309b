// POST /v1/messages/count_tokens: a local operation (pipeline/local.ts). The
// estimate is the gateway's own (estimate.ts): no supplier is asked, nothing
// is reserved or charged, no quota is consumed.
import type { LocalOperation } from '../local-operation.js';
import { decodeCountTokens, estimateOf, type CountRequest } from './estimate.js';

export const countTokensOperation: LocalOperation<CountRequest> = {
  name: 'count_tokens',
  path: '/v1/messages/count_tokens',
  envelope: 'messages',
  carrier: 'bearer_or_x_api_key',
  protocol: 'native_messages',
  modality: 'text_generation',
  decode: decodeCountTokens,
  modelOf: (request) => request.model,
  async compute(request, _model, tools) {
    // Every text is counted in the pool: tokenizing costs ~200 µs per KB on whichever thread runs it (bench/micro/count-tokens.ts).
    const counts = request.texts.length === 0 ? [] : await tools.countTokens(request.texts);
    return `{"input_tokens":${estimateOf(request, counts)},"estimated":true}`;
  },
};
