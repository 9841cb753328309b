// The catalog page shows each model's price where a person chooses a model,
// in the account currency, in both languages, with Russian plurals by rule
// (issue 34 item 3; issue 35's "16 384 токена"), and names its protocols in
// the reader's language (issue 34 item 7).
import t from 'tap';
import { startGateway, type Gateway } from '../helpers/gateway.js';

let gw: Gateway;
t.before(async () => {
  gw = await startGateway({ env: { CURRENCY: 'EUR' } });
});
t.teardown(() => gw?.stop());

/** The text of the card of `id`: tags dropped, whitespace collapsed. */
async function cardText(lang: 'en' | 'ru', id: string): Promise<string> {
  const html = await (await fetch(`${gw.url}/?lang=${lang}`)).text();
  const card = new RegExp(`<article class="card" id="model-${id}"[\\s\\S]*?</article>`).exec(html)?.[0] ?? '';
  return card.replace(/<[^>]+>/g, ' ').replace(/&middot;/g, '·').replace(/\s+/g, ' ');
}

t.test('issue 34 item 3: prices per million tokens and per image, in the configured currency', async (t) => {
  t.match(await cardText('en', 'nw-swift-1'), 'Price input 0.15 · cached input 0.075 · output 0.60 EUR per 1M tokens');
  t.match(await cardText('en', 'nw-embed-1'), 'Price input 0.02 EUR per 1M tokens');
  t.match(await cardText('en', 'au-canvas-1'), 'Price 0.04 EUR per image');
  t.match(await cardText('ru', 'nw-swift-1'), 'Цена ввод 0,15 · ввод из кэша 0,075 · вывод 0,60 EUR за 1 млн токенов');
  t.match(await cardText('ru', 'au-canvas-1'), 'Цена 0,04 EUR за изображение');
});

t.test('issue 34 item 3: the model list carries each model\'s pricing (decimal strings, account currency)', async (t) => {
  const list = (await (await fetch(`${gw.url}/v1/models`)).json()) as any;
  const byId = new Map(list.data.map((m: any) => [m.id, m]));
  t.same((byId.get('nw-swift-1') as any).pricing, { input_per_mtok: '0.15', cached_input_per_mtok: '0.075', output_per_mtok: '0.60' });
  t.same((byId.get('nw-embed-1') as any).pricing, { input_per_mtok: '0.02' });
  t.same((byId.get('au-canvas-1') as any).pricing, { per_image: '0.04' });
});

t.test('issue 35: Russian plurals by rule on the catalog page', async (t) => {
  t.match(await cardText('ru', 'ks-quill-1'), /Максимум ответа 16\s384 токена /, '16 384 токена, not токенов');
  t.match(await cardText('ru', 'nw-swift-1'), /Контекстное окно 128\s000 токенов /);
  t.match(await cardText('en', 'ks-quill-1'), 'Max output 16,384 tokens ');
});

t.test('issue 34 item 7: the catalog page names protocols in the reader\'s language, as the console does', async (t) => {
  t.match(await cardText('en', 'nw-swift-1'), 'Protocols Chat completions, Responses ');
  t.match(await cardText('ru', 'nw-swift-1'), 'Протоколы Завершения чата, Ответы ');
  t.match(await cardText('ru', 'ks-quill-1'), 'Протоколы Сообщения ');
});
