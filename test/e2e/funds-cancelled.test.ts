// Issue 30 item 12: a call cancelled after the supplier accepted it is charged
// its input (counted locally when the supplier reports nothing,
// metered_source "estimate") plus any output delivered; the rest of the hold
// is released. Images bill per image unit and none was delivered: nothing.
import t, { type Test } from 'tap';
import { parseMoney } from '../../src/money/money.js';

const micros = (money: string): number => parseMoney(money)!;
import { gatewayWithSimulator } from '../helpers/gateway.js';
import { organization, provision, usageRowsAtLeast } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

const db = await testDatabase(t);
if (db !== null) {
  const { gw } = await gatewayWithSimulator(t, db, { env: { BILLING_FLUSH_MS: '0' } });

  /** Sends `body` to `path`, reads what comes (a stream), and leaves after `leaveMs`. */
  async function leave(key: string, path: string, body: unknown, leaveMs: number): Promise<void> {
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), leaveMs);
    try {
      const res = await fetch(`${gw.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: ac.signal,
      });
      // A stream: read until the client leaves.
      for await (const _ of res.body as any) void _;
    } catch {
      // the client left
    } finally {
      clearTimeout(timer);
    }
  }

  async function settledRow(t: Test, orgId: string, balance: string): Promise<any> {
    const [row] = await usageRowsAtLeast(gw.url, orgId, 1);
    t.equal(row.outcome, 'cancelled', 'settled cancelled');
    const org = await organization(gw.url, orgId);
    t.equal(org.held, '0.00', 'the rest of the hold released');
    t.equal(micros(balance) - micros(org.balance), micros(row.charged), 'the balance moved by the charge');
    return row;
  }

  const prompt = 'a prompt the supplier read in full before the client left '.repeat(20);

  t.test('issue 30 item 12: a unary chat call cancelled after dispatch is charged its input', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '10.00' });
    await leave(key, '/v1/chat/completions', { model: 'au-atlas-2', max_tokens: 100, messages: [{ role: 'user', content: `${prompt} [sim:delay_ms=3000]` }] }, 500);
    const row = await settledRow(t, orgId, '10.00');
    t.ok(row.input_tokens > 200, `input counted: ${row.input_tokens} tokens`);
    t.equal(row.output_tokens, 0, 'no output delivered');
    t.equal(row.metered_source, 'estimate');
    t.ok(micros(row.charged) > 0 && micros(row.charged) < micros(row.reserved), `charged ${row.charged} of ${row.reserved} held`);
  });

  t.test('issue 30 item 12: a stream cancelled after dispatch, before any output, is charged its input', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '10.00' });
    await leave(key, '/v1/messages', { model: 'quill', max_tokens: 100, stream: true, messages: [{ role: 'user', content: `${prompt} [sim:delay_ms=3000]` }] }, 500);
    const row = await settledRow(t, orgId, '10.00');
    t.ok(row.input_tokens > 200, `input counted: ${row.input_tokens} tokens`);
    t.equal(row.output_tokens, 0);
    t.ok(micros(row.charged) > 0, `charged ${row.charged}`);
  });

  t.test('issue 30 item 12: a stream cancelled mid-answer with no supplier usage is charged input and delivered output, as an estimate', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '10.00' });
    await leave(
      key,
      '/v1/chat/completions',
      { model: 'au-atlas-2', max_tokens: 1000, stream: true, messages: [{ role: 'user', content: `${prompt} [sim:words=500] [sim:delay_ms=20] [sim:no_usage]` }] },
      600,
    );
    const row = await settledRow(t, orgId, '10.00');
    t.ok(row.input_tokens > 200, `input ${row.input_tokens}`);
    t.ok(row.output_tokens > 0 && row.output_tokens < 500, `output delivered ${row.output_tokens}`);
    t.equal(row.metered_source, 'estimate');
  });

  t.test('issue 30 item 12: an embeddings call cancelled in the fetch thread is charged its input', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '10.00' });
    await leave(key, '/v1/embeddings', { model: 'nw-embed-1', encoding_format: 'base64', input: [`${prompt} [sim:delay_ms=3000]`] }, 500);
    const row = await settledRow(t, orgId, '10.00');
    t.ok(row.input_tokens > 200, `input ${row.input_tokens}`);
    t.ok(micros(row.charged) > 0, `charged ${row.charged}`);
  });

  t.test('issue 30 item 12: an image call cancelled after dispatch costs nothing (billed per image delivered)', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '10.00' });
    await leave(key, '/v1/images/generations', { model: 'canvas', prompt: `${prompt} [sim:delay_ms=3000]`, n: 1 }, 500);
    const row = await settledRow(t, orgId, '10.00');
    t.equal(row.charged, '0.00');
    t.equal(row.image_units, 0);
  });
}
