// The responses request, prepared: what goes upstream (and what never does),
// the bound, and the pool path equal to the inline one.
import t from 'tap';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import { modelCallNamed } from '../../../src/surfaces/index.js';
import { responsesCodec } from '../../../src/surfaces/responses/codec.js';
import { ResponseOwnership } from '../../../src/surfaces/responses/ownership.js';
import { prepareResponses, responsesInputText } from '../../../src/surfaces/responses/prepare.js';

const route = { upstreamModel: 'up-1' } as any;
const owners = new ResponseOwnership({ query: async () => ({ rows: [] }) }, { maxEntries: 10, maxAgeMs: 1000, flushMs: 1 });
const codec = responsesCodec;
const services = { responseOwners: owners };

function upstream(body: object, max: number | null = null): any {
  return JSON.parse(codec.upstreamBody(prepareResponses(body, JSON.stringify(body).length), route, max));
}

function refusal(body: object): string | null {
  try {
    prepareResponses(body, 100);
    return null;
  } catch (err) {
    t.ok(err instanceof GatewayError);
    return (err as GatewayError).param;
  }
}

t.test('the upstream body: one bound, store false, instructions as the leading system turn, developer as system', async (t) => {
  const sent = upstream({ model: 'swift', input: 'hi', instructions: 'be brief', store: false, stream: true });
  t.same(sent, { model: 'up-1', max_output_tokens: 32768, store: false, input: [{ type: 'message', role: 'system', content: 'be brief' }, { type: 'message', role: 'user', content: 'hi' }], stream: true });
  t.same(upstream({ model: 'swift', input: 'hi', max_output_tokens: 100 }, 64), { model: 'up-1', max_output_tokens: 64, store: false, input: 'hi' }, 'a bare string stays; the model ceiling applies');
  const items = [
    { role: 'developer', content: 'rules' },
    { type: 'function_call', call_id: 'c', name: 'f', arguments: '{}', id: 'fc_1', status: 'completed', namespace: 'ns' },
    { type: 'function_call_output', call_id: 'c', output: [{ type: 'input_text', text: 'ok' }] },
    { type: 'reasoning', id: 'rs', summary: [{ type: 'summary_text', text: 's' }], encrypted_content: 'e' },
    { type: 'web_search_call', id: 'ws', status: 'completed', action: { type: 'search' } },
    { type: 'custom_tool_call', call_id: 'd', name: 'p', input: 'x' },
    { type: 'custom_tool_call_output', call_id: 'd', output: 'y' },
    { type: 'additional_tools', tools: [{ type: 'namespace' }] },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'go' }] },
  ];
  const got = upstream({ model: 'swift', input: items });
  t.same(got.input, [{ role: 'system', content: 'rules' }, ...items.slice(1)], 'items in order, every member as stated, developer → system');
});

t.test('what is never forwarded, and what is', async (t) => {
  const sent = upstream({
    model: 'swift', input: 'x', previous_response_id: 'req_1', parallel_tool_calls: true, reasoning: { effort: 'high' }, prompt_cache_key: 'k',
    client_metadata: { a: 1 }, text: { verbosity: 'high' }, include: ['message.output_text.logprobs'],
    tools: [{ type: 'function', name: 'f', parameters: {} }, { type: 'web_search', search_context_size: 'low' }], tool_choice: { type: 'function', name: 'f' },
  });
  t.same(Object.keys(sent).sort(), ['input', 'max_output_tokens', 'model', 'store', 'tool_choice', 'tools']);
  t.same(upstream({ model: 'swift', input: 'x', include: ['a', 'reasoning.encrypted_content'], text: { format: { type: 'text' } } }).include, ['reasoning.encrypted_content']);
  const prepared = prepareResponses({ model: 'swift', input: 'x', previous_response_id: 'req_1' }, 50);
  t.equal(prepared.meta.previousResponseId, 'req_1', 'kept for verify()');
  t.notMatch(prepared.rest, /req_1/);
});

t.test('the bound: the default 32768, the stated ceiling, input bytes plus media figures', async (t) => {
  const p = prepareResponses({ model: 'swift', input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://x/y.png' }] }], instructions: 'i' }, 300);
  t.same(p.decoded.bound, { inputTokens: 300 - 15 + 1445, mediaTokens: 1445, turns: 2, statedCeiling: null, ceilingParam: 'max_output_tokens', defaultCeiling: 32768, choices: 1, imageUnits: 0 });
  t.equal(prepareResponses({ model: 'swift', input: 'x', max_output_tokens: 7 }, 10).decoded.bound.statedCeiling, 7);
  t.match(responsesInputText(prepareResponses({ model: 'swift', input: [{ role: 'user', content: 'hello' }, { type: 'function_call', call_id: 'c', name: 'f', arguments: '{"q":1}' }] }, 10)), /hello[\s\S]*f[\s\S]*\{"q":1\}/);
});

t.test('refusals by name', async (t) => {
  t.equal(refusal({ model: 'm', input: 'x', max_output_tokens: 0 }), 'max_output_tokens');
  t.equal(refusal({ model: 'm', input: 'x', store: true }), 'store');
  t.equal(refusal({ model: 'm', input: 'x', tools: [{ type: 'custom', name: 'a' }], tool_choice: { type: 'function', name: 'a' } }), 'tool_choice.name');
  t.equal(refusal({ model: 'm', input: 'x', tools: [{ type: 'web_search', execution: 'client' }] }), 'tools[0]');
  t.equal(refusal({ model: 'm', input: [{ type: 'custom_tool_call', call_id: 'c', name: 'p' }] }), 'input[0].input');
  t.equal(refusal({ model: 'm', input: [{ role: 'user' }] }), 'input[0].content');
  t.equal(refusal({ model: 'm', input: [{ type: 'function_call_output', call_id: 'c', output: [{ type: 'output_text', text: 'x' }] }] }), 'input[0].output[0].type');
  t.equal(refusal({ model: 'm', input: 'x', tool_choice: 'auto', tools: [] }), null, 'a mode word needs no tool');
  t.equal(refusal({ model: 'm', input: 'x', store: false, max_output_tokens: null, instructions: null }), null);
});

t.test('issue 31 item 3: members clients send are accepted, bounded, carried or not as docs/api says', async (t) => {
  const body = {
    model: 'swift', input: 'x', temperature: 0, top_p: 0.5, metadata: { a: 'b' }, user: 'u', truncation: 'auto', service_tier: 'flex',
    safety_identifier: 's', max_tool_calls: 3, top_logprobs: 2, parallel_tool_calls: false, background: false, stream_options: null,
  };
  t.equal(refusal(body), null, 'all accepted together');
  const sent = upstream(body);
  for (const m of ['temperature', 'top_p', 'user', 'truncation', 'safety_identifier', 'max_tool_calls']) t.same(sent[m], (body as any)[m], `${m} carried`);
  for (const m of ['metadata', 'service_tier', 'top_logprobs', 'parallel_tool_calls', 'background', 'stream_options']) t.notOk(m in sent, `${m} not carried`);
  t.notOk('temperature' in upstream({ model: 'swift', input: 'x', temperature: null }), 'a null is left out');
  t.equal(refusal({ model: 'm', input: 'x', background: true }), 'background', 'nothing runs after the call: refused by name');
  t.equal(refusal({ model: 'm', input: 'x', temperature: 2.5 }), 'temperature');
  t.equal(refusal({ model: 'm', input: 'x', truncation: 'sometimes' }), 'truncation');
  t.equal(refusal({ model: 'm', input: 'x', max_tool_calls: 0 }), 'max_tool_calls');
  t.equal(refusal({ model: 'm', input: 'x', conversation: 'c' }), 'conversation', 'a member that needs stored state stays refused');
  t.equal(refusal({ model: 'm', input: 'x', conversation: { id: 'conv_1' } }), 'conversation');
  t.equal(refusal({ model: 'm', input: 'x', prompt: { id: 'pmpt_1', version: '2' } }), 'prompt');
});

t.test('issue 31: conversation and prompt are refused by name with their reason in the message', async (t) => {
  const message = (body: object): string => {
    try {
      prepareResponses(body, JSON.stringify(body).length);
    } catch (err) {
      return (err as GatewayError).message;
    }
    return '(accepted)';
  };
  t.equal(message({ model: 'm', input: 'x', conversation: 'conv_1' }),
    '`conversation` is not accepted: it names a conversation stored in the supplier account every organization shares, and Tollgate keeps no conversation; send the context in `input`.');
  t.equal(message({ model: 'm', input: 'x', prompt: { id: 'pmpt_1' } }),
    '`prompt` is not accepted: it names a prompt stored in the supplier account every organization shares, whose text Tollgate cannot see, bound or charge; send the text as `instructions` or `input`.');
  t.equal(message({ model: 'm', input: 'x', nonsense: 1 }), '`nonsense` is not a member this surface accepts (docs/api lists them).');
});

t.test('issue 30 item 2: the local input count covers instructions, tools and text.format\'s schema', async (t) => {
  const text = responsesInputText(prepareResponses({
    model: 'swift', input: 'hi', instructions: 'needle_in_instructions', tools: [{ type: 'function', name: 'needle_in_tool' }],
    text: { format: { type: 'json_schema', name: 'n', schema: { properties: { needle_in_schema: {} } } } },
  }, 10));
  for (const needle of ['needle_in_instructions', 'needle_in_tool', 'needle_in_schema', 'hi']) t.match(text, needle, `${needle} counted`);
});

t.test('the pool runs the same preparer as the inline path', async (t) => {
  t.equal(modelCallNamed('responses').prepare, prepareResponses);
});

t.test('verify(): none stated, nothing asked; unknown or another organization\'s refused by name', async (t) => {
  const info = { requestId: 'r', model: 'm', created: 1, orgId: '00000000-0000-4000-8000-000000000001' };
  await codec.verify!(prepareResponses({ model: 'm', input: 'x' }, 10), info, services);
  owners.record('resp_mine', info.orgId);
  owners.record('resp_theirs', '00000000-0000-4000-8000-000000000002');
  await codec.verify!(prepareResponses({ model: 'm', input: 'x', previous_response_id: 'resp_mine' }, 10), info, services);
  for (const id of ['resp_theirs', 'resp_unknown']) {
    const err = await codec.verify!(prepareResponses({ model: 'm', input: 'x', previous_response_id: id }, 10), info, services).catch((e) => e);
    t.ok(err instanceof GatewayError, id);
    t.same([err.code, err.param], ['invalid_request', 'previous_response_id']);
  }
  await owners.close();
});
