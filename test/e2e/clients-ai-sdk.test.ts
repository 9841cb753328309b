// Issue 31: the Vercel AI SDK (`ai` with @ai-sdk/openai, whose default
// model speaks responses, its .chat() chat completions, @ai-sdk/anthropic
// on messages and @ai-sdk/openai-compatible on chat), unchanged, against a
// real gateway with the simulator as the suppliers: generate and stream
// text, a tool round trip, structured output, embeddings, images, error
// classes.
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { APICallError, embedMany, generateImage, generateObject, generateText, jsonSchema, stepCountIs, streamObject, streamText, tool } from 'ai';
import t from 'tap';
import { clientsGateway } from './clients-gateway.js';

const recipe = jsonSchema<{ title: string; minutes: number; steps: string[] }>({
  type: 'object',
  additionalProperties: false,
  required: ['title', 'minutes', 'steps'],
  properties: { title: { type: 'string' }, minutes: { type: 'integer', minimum: 1 }, steps: { type: 'array', items: { type: 'string' } } },
});

const gw = await clientsGateway(t);
if (gw !== null) {
  const { key } = gw;
  const openai = createOpenAI({ apiKey: key, baseURL: `${gw.url}/v1` });
  const compatible = createOpenAICompatible({ name: 'tollgate', apiKey: key, baseURL: `${gw.url}/v1`, includeUsage: true, supportsStructuredOutputs: true });
  const anthropic = createAnthropic({ apiKey: key, baseURL: `${gw.url}/v1` });
  const models = [
    ['openai (responses)', openai('swift')],
    ['openai.chat', openai.chat('swift')],
    ['openai-compatible', compatible.chatModel('swift')],
    ['anthropic', anthropic('quill')],
  ] as const;
  const weather = tool({
    description: 'Current weather',
    inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }),
    execute: async () => ({ celsius: 20 }),
  });

  for (const [name, model] of models) {
    t.test(`${name}: generateText and streamText with the settings clients send (items 1–4, 8)`, async (t) => {
      const settings = name === 'anthropic' ? { temperature: 0, maxOutputTokens: 32 } : { temperature: 0, topP: 1, seed: 1, presencePenalty: 0.1, frequencyPenalty: 0.1, maxOutputTokens: 32 };
      const r = await generateText({ model, prompt: 'Count [sim:words=4]', maxRetries: 0, ...settings });
      t.equal(r.text, 'the quick brown fox');
      t.equal(r.finishReason, 'stop');
      t.ok((r.usage.outputTokens ?? 0) > 0, 'usage');
      const s = streamText({ model, prompt: 'Count [sim:words=6]', maxRetries: 0, ...settings });
      t.equal(await s.text, 'the quick brown fox over lazy');
      t.equal((await s.usage).outputTokens, r.usage.outputTokens! + 2, 'usage on the stream');
    });

    t.test(`${name}: a tool round trip`, async (t) => {
      const r = await generateText({ model, prompt: 'Weather? [sim:tool=weather]', tools: { weather }, stopWhen: stepCountIs(2), maxRetries: 0 });
      t.equal(r.steps.length, 2, 'the tool result went back to the model');
      t.equal(r.steps[0]!.toolCalls[0]!.toolName, 'weather');
      t.same(r.steps[0]!.toolResults[0]!.output, { celsius: 20 });
    });

    if (name !== 'anthropic') {
      t.test(`${name}: generateObject and streamObject (item 9)`, async (t) => {
        const { object } = await generateObject({ model, schema: recipe, prompt: 'A recipe', maxRetries: 0 });
        t.equal(typeof object.title, 'string');
        t.ok(Number.isInteger(object.minutes) && object.minutes >= 1);
        const s = streamObject({ model, schema: recipe, prompt: 'A recipe', maxRetries: 0 });
        let partials = 0;
        // The object settles once the stream is read.
        for await (const _ of s.partialObjectStream) partials++;
        t.ok(partials > 1, 'partial objects as the JSON streams');
        t.same(await s.object, object, 'the same object streamed');
      });
    }

    t.test(`${name}: a bad key is an APICallError with status 401`, async (t) => {
      const bad = name === 'anthropic' ? createAnthropic({ apiKey: 'tg_nope', baseURL: `${gw.url}/v1` })('quill')
        : name === 'openai-compatible' ? createOpenAICompatible({ name: 'x', apiKey: 'tg_nope', baseURL: `${gw.url}/v1` }).chatModel('swift')
        : name === 'openai.chat' ? createOpenAI({ apiKey: 'tg_nope', baseURL: `${gw.url}/v1` }).chat('swift')
        : createOpenAI({ apiKey: 'tg_nope', baseURL: `${gw.url}/v1` })('swift');
      const err = await generateText({ model: bad, prompt: 'x', maxRetries: 0 }).catch((e) => e);
      t.ok(APICallError.isInstance(err), err?.message);
      t.equal(err.statusCode, 401);
    });
  }

  t.test('embedMany asks for floats, which the spec refuses by name; generateImage (item 5)', async (t) => {
    for (const embedder of [openai.embedding('embed'), compatible.embeddingModel('embed')]) {
      const err = await embedMany({ model: embedder, values: ['hello', 'world'], maxRetries: 0, providerOptions: { openai: { dimensions: 32 }, tollgate: { dimensions: 32 } } }).catch((e) => e);
      t.ok(APICallError.isInstance(err));
      t.equal(err.statusCode, 400);
      t.match(err.responseBody, /"param":"encoding_format"/, 'the AI SDK always sends encoding_format float (docs/api/embeddings.md)');
      t.match(err.message, /encoding_format/, 'the message names the member');
    }
    const { images } = await generateImage({ model: openai.image('canvas'), prompt: 'a kite', n: 1, size: '1024x1024', maxRetries: 0 });
    t.ok(images[0]!.uint8Array.length > 0, 'b64_json decoded');
  });

  t.test('a member refused by name: the message is what the AI SDK shows', async (t) => {
    const err = await generateText({ model: openai.chat('swift'), prompt: 'x', maxRetries: 0, providerOptions: { openai: { store: true } } }).catch((e) => e);
    t.ok(APICallError.isInstance(err));
    t.equal(err.statusCode, 400);
    t.match(err.responseBody, /"param":"store"/);
  });
}
