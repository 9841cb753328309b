// `n` through the gateway (the simulator as supplier, the official openai
// client): n choices passed by index, streamed chunks carrying their index,
// usage summed over the choices, the hold × n and the charge for every
// choice's output.
import OpenAI from 'openai';
import t from 'tap';
import { gatewayWithSimulator } from '../helpers/gateway.js';
import { micros } from '../helpers/money.js';
import { organization, provision, usageRows } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

/** The demo catalog's price of nw-swift-1 (config/catalog.seed.json). */
const SWIFT = { inputPerMtok: 150000, outputPerMtok: 600000 };
const charge = (input: number, output: number): number => Math.ceil((input * SWIFT.inputPerMtok + output * SWIFT.outputPerMtok) / 1_000_000);

const db = await testDatabase(t);
if (db !== null) {
  const { gw } = await gatewayWithSimulator(t, db);
  const { key, orgId } = await provision(gw.url, { balance: '50.00' });
  const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const lastRow = async (): Promise<any> => {
    for (let i = 0; i < 50; i++) {
      const rows = await usageRows(gw.url, orgId);
      if (rows.length > seenRows) {
        seenRows = rows.length;
        return rows[0];
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('no usage row');
  };
  let seenRows = 0;

  t.test('issue 12 item 17: unary n = 2 through the gateway: both choices by index, usage summed, both charged', async (t) => {
    const reply = await client.chat.completions.create({ model: 'nw-swift-1', n: 2, messages: [{ role: 'user', content: 'two [sim:words=5]' }] });
    t.same(reply.choices.map((c) => c.index), [0, 1], 'two choices, each with its index');
    t.ok(reply.choices.every((c) => c.message.content!.split(' ').length === 5 && c.finish_reason === 'stop'), 'each a whole answer');
    t.equal(reply.usage!.completion_tokens, 10, 'output tokens summed over both choices');
    const row = await lastRow();
    t.equal(row.output_tokens, 10, 'the usage row counts both choices');
    t.equal(row.input_tokens, reply.usage!.prompt_tokens);
    t.equal(micros(row.charged), charge(reply.usage!.prompt_tokens, 10), 'charged for both choices, to the micro');
    t.equal(row.outcome, 'completed');
  });

  t.test('issue 12 item 17: streamed n = 2 through the gateway: chunks carry their index, a finish per choice, usage summed', async (t) => {
    const stream = await client.chat.completions.create({
      model: 'nw-swift-1', n: 2, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'two [sim:words=4]' }],
    });
    const text = ['', ''];
    const finish: Array<string | null> = [null, null];
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        text[c.index] += c.delta.content ?? '';
        if (c.finish_reason) finish[c.index] = c.finish_reason;
      }
    }
    t.same(text.map((s) => s.split(' ').length), [4, 4], 'each choice streamed whole, under its index');
    t.same(finish, ['stop', 'stop'], 'each choice finished');
    t.equal(usage?.completion_tokens, 8, 'output tokens summed');
    const row = await lastRow();
    t.equal(row.output_tokens, 8, 'the usage row counts both choices');
    t.equal(micros(row.charged), charge(usage!.prompt_tokens, 8));
    t.equal(row.outcome, 'completed');
  });

  t.test('issue 12 item 17: the hold of an n = 2 call covers its ceiling twice', async (t) => {
    const held = async (n: number): Promise<number> => {
      const call = client.chat.completions.create({ model: 'nw-swift-1', n, max_tokens: 1000, messages: [{ role: 'user', content: 'slow [sim:words=2] [sim:delay_ms=400]' }] });
      let amount = 0;
      for (let i = 0; i < 40 && amount === 0; i++) {
        amount = micros((await organization(gw.url, orgId)).held);
        if (amount === 0) await new Promise((r) => setTimeout(r, 20));
      }
      await call;
      await lastRow();
      return amount;
    };
    const one = await held(1);
    const two = await held(2);
    const ceiling = (1000 * SWIFT.outputPerMtok) / 1_000_000; // 600 micros: one choice's 1000 output tokens
    t.ok(one >= ceiling, `n = 1 holds at least one ceiling (${one} micros)`);
    t.ok(Math.abs(two - one - ceiling) <= 2, `n = 2 holds one more ceiling than n = 1 (${two} vs ${one} micros)`);
  });
}
