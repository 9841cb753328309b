// The chat stream transcoder with several choices (`n`): chunks of different
// choices interleave, each passed by its index unchanged, and the call is
// completed only when every choice finished without being cut.
import t from 'tap';
import { ChatStream } from '../../../src/surfaces/chat/stream.js';

const call = { requestId: 'req_1', model: 'swift', created: 1, orgId: 'org' };
const data = (choices: unknown[], usage?: unknown): { event: null; data: string } => ({ event: null, data: JSON.stringify({ id: 'up', choices, ...(usage ? { usage } : {}) }) });
const piece = (index: number, content: string, finish: string | null = null) => ({ index, delta: { content }, finish_reason: finish });

function run(events: Array<{ event: null; data: string }>): { s: ChatStream; out: string[] } {
  const s = new ChatStream(call, true);
  const out = events.map((e) => s.event(e));
  s.event({ event: null, data: '[DONE]' });
  return { s, out };
}

t.test('issue 12 item 17: interleaved choices pass by index; the outcome weighs every choice', async (t) => {
  const { s, out } = run([
    data([piece(0, 'a')]),
    data([piece(1, 'b')]),
    data([piece(0, '', 'length')]),
    data([piece(1, 'c')]),
    data([piece(1, '', 'stop')]),
    data([], { prompt_tokens: 3, completion_tokens: 4 }),
  ]);
  t.same(out.filter((o) => o !== '').map((o) => JSON.parse(o.slice(6)).choices.map((c: any) => c.index)), [[0], [1], [0], [1], [1]], 'each chunk keeps its choice index');
  t.equal(s.producedText(), 'abc', 'what every choice produced');
  t.equal(s.metered()?.outputTokens, 4, 'usage over all choices, as the supplier reported it');
  t.equal(s.outcome(), 'incomplete', 'choice 0 was cut: the call is not complete although the last finish was stop');

  t.equal(run([data([piece(0, 'a'), piece(1, 'b')]), data([piece(0, '', 'stop'), piece(1, '', 'stop')])]).s.outcome(), 'completed', 'both finished');
  t.equal(run([data([piece(0, 'a'), piece(1, 'b')]), data([piece(0, '', 'stop')])]).s.outcome(), 'incomplete', 'choice 1 never finished');
});
