// The responses stream transcoder on its own: the gateway's sequence numbers,
// output indexes renumbered past items it leaves out, the supplier's terminal
// event held back, and exactly one terminal event of ours.
import t from 'tap';
import type { Metered } from '../../../src/billing/types.js';
import { ResponsesStream } from '../../../src/surfaces/responses/stream.js';

const call = { requestId: 'req_1', model: 'swift', created: 7, orgId: 'org' };
const settled: Metered = { inputTokens: 10, cachedInputTokens: 2, cacheWriteTokens: 0, outputTokens: 3, imageUnits: 0, source: 'supplier' };

function ev(type: string, rest: object = {}) {
  return { event: type, data: JSON.stringify({ type, sequence_number: 500, ...rest }) };
}

function parse(frames: string): any[] {
  return frames.split('\n\n').filter(Boolean).map((f) => JSON.parse(f.split('\n')[1]!.slice(6)));
}

const msg = { id: 'm', type: 'message', status: 'in_progress', role: 'assistant', content: [], logprobs: [] };
const done = { ...msg, status: 'completed', content: [{ type: 'output_text', text: 'hi there', annotations: [], logprobs: [] }] };
const usage = { input_tokens: 10, input_tokens_details: { cached_tokens: 2 }, output_tokens: 3, output_tokens_details: { reasoning_tokens: 1 } };

function upstream(): Array<{ event: string; data: string }> {
  return [
    ev('response.created', { response: { id: 'up', status: 'in_progress' } }),
    ev('response.in_progress'),
    ev('response.output_item.added', { output_index: 0, item: { type: 'file_search_call', id: 'f' } }),
    ev('response.output_item.done', { output_index: 0, item: { type: 'file_search_call', id: 'f' } }),
    ev('response.output_item.added', { output_index: 1, item: msg }),
    ev('response.content_part.added', { output_index: 1, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } }),
    ev('response.output_text.delta', { output_index: 1, content_index: 0, delta: 'hi' }),
    ev('response.output_text.delta', { output_index: 1, content_index: 0, delta: ' there' }),
    ev('response.output_text.done', { output_index: 1, content_index: 0, text: 'hi there' }),
    ev('response.content_part.done', { output_index: 1, content_index: 0, part: done.content[0] }),
    ev('response.output_item.done', { output_index: 1, item: done }),
  ];
}

t.test('renumbered from 0, items of other types left out, the terminal event held until finish()', async (t) => {
  const s = new ResponsesStream(call);
  let out = '';
  for (const e of upstream()) out += s.event(e);
  t.equal(s.complete, false, 'no terminal event yet');
  out += s.event(ev('response.completed', { response: { status: 'completed', usage, output: [done] } }));
  t.equal(s.complete, true);
  t.same(s.metered(), { inputTokens: 10, cachedInputTokens: 2, cacheWriteTokens: 0, outputTokens: 3, imageUnits: 0, source: 'supplier' });
  t.equal(s.producedText(), 'hi there');
  t.equal(s.outcome(), 'completed');
  const evs = parse(out + s.finish(settled));
  t.same(evs.map((e) => e.type), [
    'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
    'response.output_text.delta', 'response.output_text.delta', 'response.output_text.done', 'response.content_part.done',
    'response.output_item.done', 'response.completed',
  ]);
  t.same(evs.map((e) => e.sequence_number), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 'the supplier\'s numbers never passed on');
  t.ok(evs.slice(1).every((e) => e.output_index === undefined || e.output_index === 0), 'output_index renumbered past the left-out item');
  t.same(evs[0].response, { id: 'req_1', object: 'response', created_at: 7, model: 'swift', status: 'in_progress', output: [] });
  t.same(evs[1].response, evs[0].response, 'response.in_progress right after response.created');
  t.same(evs[3].part, { type: 'output_text', text: '', annotations: [] }, 'opened with no text');
  const last = evs[9].response;
  t.same([last.id, last.model, last.status, last.incomplete_details], ['req_1', 'swift', 'completed', null]);
  t.same(last.output, [{ type: 'message', id: 'm', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'hi there', annotations: [] }] }], 'only the listed members');
  t.same(last.usage, { input_tokens: 10, input_tokens_details: { cached_tokens: 2 }, output_tokens: 3, output_tokens_details: { reasoning_tokens: 1 }, total_tokens: 13 });
});

t.test('issue 31 items 1 and 2: every item-scoped event names its item; output_text parts carry annotations; deltas end with .done', async (t) => {
  const s = new ResponsesStream(call);
  let out = '';
  for (const e of upstream()) out += s.event(e);
  out += s.event(ev('response.completed', { response: { status: 'completed', usage } }));
  const evs = parse(out + s.finish(settled));
  for (const e of evs.filter((e) => /content_part|output_text/.test(e.type))) {
    t.equal(e.item_id, 'm', `${e.type} names its item`);
    t.equal(e.output_index, 0);
    t.equal(e.content_index, 0);
  }
  const byType = (type: string) => evs.filter((e) => e.type === type);
  t.same(byType('response.output_text.delta').map((e) => e.logprobs), [[], []], 'text deltas carry logprobs');
  t.same(byType('response.output_text.done')[0], { type: 'response.output_text.done', sequence_number: 6, output_index: 0, item_id: 'm', content_index: 0, text: 'hi there', logprobs: [] });
  t.same(byType('response.content_part.done')[0].part, { type: 'output_text', text: 'hi there', annotations: [] });
  t.same(byType('response.output_item.done')[0].item.content[0].annotations, []);
  t.same(byType('response.completed')[0].response.output[0].content[0].annotations, [], 'the completed snapshot too');
});

t.test('issue 31 item 2: an item the supplier gave no id gets one, kept from added to done and named by its events', async (t) => {
  const s = new ResponsesStream(call);
  const bare = { type: 'message', role: 'assistant', content: [] };
  const evs = parse([
    ev('response.output_item.added', { output_index: 0, item: bare }),
    ev('response.content_part.added', { output_index: 0, content_index: 0, part: { type: 'output_text', text: '' } }),
    ev('response.output_text.delta', { output_index: 0, content_index: 0, delta: 'x' }),
    ev('response.output_item.done', { output_index: 0, item: { ...bare, id: 'other', content: [{ type: 'output_text', text: 'x' }] } }),
  ].map((e) => s.event(e)).join(''));
  const id = evs[2].item.id;
  t.match(id, /^msg_1_0$/);
  t.same(evs.slice(3).map((e) => e.item_id ?? e.item.id), [id, id, id]);
});

t.test('response.incomplete: response.completed with status incomplete and the reason', async (t) => {
  const s = new ResponsesStream(call);
  for (const e of upstream()) s.event(e);
  s.event(ev('response.incomplete', { response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, usage } }));
  t.equal(s.outcome(), 'incomplete');
  const [last] = parse(s.finish(settled));
  t.same([last.type, last.response.status, last.response.incomplete_details], ['response.completed', 'incomplete', { reason: 'max_output_tokens' }]);
});

t.test('nothing after the supplier\'s terminal event; its response.failed or error means failure', async (t) => {
  const twice = new ResponsesStream(call);
  for (const e of upstream()) twice.event(e);
  twice.event(ev('response.completed', { response: { status: 'completed', usage } }));
  t.equal(twice.event(ev('response.output_item.added', { output_index: 5, item: msg })), '', 'events after the terminal one are dropped');
  t.equal(twice.event(ev('response.completed', { response: { status: 'completed' } })), '');
  for (const type of ['response.failed', 'error']) {
    const s = new ResponsesStream(call);
    let out = '';
    for (const e of upstream()) out += s.event(e);
    out += s.event(ev(type, { response: { status: 'failed', error: { message: 'secret' } } }));
    t.equal(s.complete, false, `${type}: not complete`);
    const evs = parse(out + s.failure());
    t.same(evs.map((e) => e.sequence_number), evs.map((_, i) => i));
    const last = evs[evs.length - 1];
    t.same([last.type, last.response.id, last.response.model, last.response.status], ['response.failed', 'req_1', 'swift', 'failed']);
    t.notMatch(JSON.stringify(last), /secret/);
  }
});

t.test('a supplier that skips response.created still opens with ours; one that sends nothing opens nothing', async (t) => {
  const s = new ResponsesStream(call);
  const evs = parse(upstream().slice(4).map((e) => s.event(e)).join(''));
  t.equal(evs[0].type, 'response.created');
  t.same(evs.map((e) => e.sequence_number), evs.map((_, i) => i));
  const empty = new ResponsesStream(call);
  t.equal(empty.event(ev('response.in_progress')), '');
  t.equal(empty.event({ event: null, data: 'not json' } as any), '');
  t.equal(empty.complete, false);
});

t.test('function_call, custom_tool_call and web_search_call deltas and search events', async (t) => {
  const s = new ResponsesStream(call);
  const fc = { id: 'fc', type: 'function_call', call_id: 'c1', name: 'f', arguments: '', status: 'in_progress' };
  const ct = { id: 'ct', type: 'custom_tool_call', call_id: 'c2', name: 'p', input: '' };
  const ws = { id: 'ws', type: 'web_search_call', status: 'in_progress' };
  const evs = parse([
    ev('response.output_item.added', { output_index: 0, item: ws }),
    ev('response.web_search_call.searching', { output_index: 0, item_id: 'ws' }),
    ev('response.output_item.added', { output_index: 1, item: fc }),
    ev('response.function_call_arguments.delta', { output_index: 1, delta: '{"a"' }),
    ev('response.function_call_arguments.done', { output_index: 1, arguments: 'not what the deltas said' }),
    ev('response.output_item.added', { output_index: 2, item: ct }),
    ev('response.custom_tool_call_input.delta', { output_index: 2, delta: 'x' }),
    ev('response.custom_tool_call_input.done', { output_index: 2, input: 'x' }),
    ev('response.output_text.delta', { output_index: 2, content_index: 0, delta: 'wrong item type' }),
  ].map((e) => s.event(e)).join(''));
  t.same(evs.map((e) => e.type), [
    'response.created', 'response.in_progress', 'response.output_item.added', 'response.web_search_call.searching', 'response.output_item.added',
    'response.function_call_arguments.delta', 'response.function_call_arguments.done', 'response.output_item.added',
    'response.custom_tool_call_input.delta', 'response.custom_tool_call_input.done',
  ]);
  t.same(evs[3].item, { type: 'web_search_call', id: 'ws', status: 'searching' });
  t.equal(evs[3].item_id, 'ws');
  t.same([evs[5].output_index, evs[5].item_id, evs[5].delta], [1, 'fc', '{"a"']);
  t.same([evs[6].item_id, evs[6].name, evs[6].arguments], ['fc', 'f', '{"a"'], 'the deltas\' text, with the function\'s name');
  t.same([evs[8].item_id, evs[9].item_id, evs[9].input], ['ct', 'ct', 'x']);
  t.equal(s.producedText(), '{"a"x');
});
