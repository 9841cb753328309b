// Issue 31: LangChain (@langchain/openai on chat completions and, with
// useResponsesApi, responses; @langchain/anthropic on messages) and the
// OpenAI Agents SDK (@openai/agents, responses and chat completions
// models), unchanged, against a real gateway with the simulator as the
// suppliers: invoke and stream, tools (bindTools with parallel_tool_calls),
// structured output (on messages, ChatAnthropic's forced tool), embeddings,
// error classes (the Agents SDK's: the openai client's, let through).
import { createRequire } from 'node:module';
import { Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner, setTracingDisabled, tool } from '@openai/agents';
import OpenAI from 'openai';
import t from 'tap';
import { z } from 'zod';
import { clientsGateway } from './clients-gateway.js';

// LangChain through its CommonJS build: the test runner's ESM resolver
// (ts-node's) maps openai's "./lib/*" export pattern to a file that does not
// exist, which plain Node resolves fine. All of LangChain comes from the
// same build, so its classes are one set.
const require = createRequire(import.meta.url);
const { ChatAnthropic } = require('@langchain/anthropic') as typeof import('@langchain/anthropic');
const { HumanMessage, ToolMessage } = require('@langchain/core/messages') as typeof import('@langchain/core/messages');
const { ChatOpenAI, OpenAIEmbeddings } = require('@langchain/openai') as typeof import('@langchain/openai');
type ChatOpenAI = import('@langchain/openai').ChatOpenAI;

const Recipe = z.object({ title: z.string(), minutes: z.number().int().min(1), steps: z.array(z.string()) });
const weatherTool = { type: 'function', function: { name: 'get_weather', description: 'Current weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };

const gw = await clientsGateway(t);
if (gw !== null) {
  setTracingDisabled(true);
  const { key } = gw;
  const configuration = { baseURL: `${gw.url}/v1` };
  const chats = [
    ['ChatOpenAI (chat completions)', new ChatOpenAI({ model: 'swift', apiKey: key, configuration, temperature: 0, maxRetries: 0 })],
    ['ChatOpenAI (useResponsesApi)', new ChatOpenAI({ model: 'swift', apiKey: key, configuration, temperature: 0, maxRetries: 0, useResponsesApi: true })],
    ['ChatAnthropic', new ChatAnthropic({ model: 'quill', apiKey: key, anthropicApiUrl: gw.url, temperature: 0, maxTokens: 64, maxRetries: 0 })],
  ] as const;

  for (const [name, model] of chats) {
    t.test(`${name}: invoke and stream (items 1–3)`, async (t) => {
      const r = await model.invoke('Count [sim:words=4]');
      t.equal(r.text, 'the quick brown fox');
      t.ok((r.usage_metadata?.output_tokens ?? 0) > 0, 'usage');
      let streamed = '';
      for await (const chunk of await model.stream('Count [sim:words=5]')) streamed += chunk.text;
      t.equal(streamed, 'the quick brown fox over');
    });

    t.test(`${name}: bindTools (parallel_tool_calls false where OpenAI's), a tool round trip`, async (t) => {
      const bound = name === 'ChatAnthropic' ? model.bindTools([weatherTool]) : (model as ChatOpenAI).bindTools([weatherTool], { parallel_tool_calls: false });
      const ask = new HumanMessage('Weather? [sim:tool=get_weather]');
      const first = await bound.invoke([ask]);
      const call = first.tool_calls![0]!;
      t.equal(call.name, 'get_weather');
      const second = await bound.invoke([new HumanMessage('Weather? [sim:words=2]'), first, new ToolMessage({ tool_call_id: call.id!, content: '{"celsius":20}' })]);
      // The simulator reads directives from the last user turn: after a tool result (a user turn on messages) it answers its default words.
      t.match(second.text, /^the quick/);
    });

    // OpenAI's: a JSON schema (response_format, text.format). ChatAnthropic's default: a forced tool whose
    // input_schema is the schema (its "jsonSchema" method sends output_config, which messages does not carry: docs/api/messages.md).
    t.test(`${name}: withStructuredOutput (item 9)`, async (t) => {
      const structured = name === 'ChatAnthropic' ? model.withStructuredOutput(Recipe) : (model as ChatOpenAI).withStructuredOutput(Recipe, { method: 'jsonSchema', strict: true });
      const recipe = await structured.invoke('A recipe');
      t.equal(typeof recipe.title, 'string');
      t.ok(Number.isInteger(recipe.minutes) && recipe.minutes >= 1);
      t.ok(Array.isArray(recipe.steps));
    });
  }

  t.test('OpenAIEmbeddings (base64 through the openai client) with dimensions (item 6)', async (t) => {
    const embeddings = new OpenAIEmbeddings({ model: 'embed', apiKey: key, configuration, dimensions: 16, maxRetries: 0 });
    const vectors = await embeddings.embedDocuments(['hello', 'world']);
    t.same(vectors.map((v) => v.length), [16, 16]);
  });

  t.test('LangChain error classes: a bad key', async (t) => {
    const bad = new ChatOpenAI({ model: 'swift', apiKey: 'tg_nope', configuration, maxRetries: 0 });
    const err = await bad.invoke('x').catch((e) => e);
    t.equal(err?.status, 401, err?.message);
    const badAnthropic = new ChatAnthropic({ model: 'quill', apiKey: 'tg_nope', anthropicApiUrl: gw.url, maxRetries: 0 });
    t.equal((await badAnthropic.invoke('x').catch((e) => e))?.status, 401);
  });

  const openaiClient = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const runner = new Runner();
  const agentModels = [
    ['Agents SDK (responses)', new OpenAIResponsesModel(openaiClient, 'swift')],
    ['Agents SDK (chat completions)', new OpenAIChatCompletionsModel(openaiClient, 'swift')],
  ] as const;
  for (const [name, model] of agentModels) {
    t.test(`${name}: run with modelSettings (temperature), stream, a tool, an outputType (items 1–4, 9)`, async (t) => {
      const agent = new Agent({ name: 'a', instructions: 'Be brief.', model, modelSettings: { temperature: 0, topP: 1, parallelToolCalls: false } });
      const r = await runner.run(agent, 'Count [sim:words=3]');
      t.equal(r.finalOutput, 'the quick brown');
      const s = await runner.run(agent, 'Count [sim:words=4]', { stream: true });
      let text = '';
      for await (const chunk of s.toTextStream()) text += chunk;
      await s.completed;
      t.equal(text, 'the quick brown fox');
      let called = 0;
      // The simulator's tool calls carry the arguments {"sim":true}.
      const getWeather = tool({ name: 'get_weather', description: 'Weather', parameters: z.object({ sim: z.boolean() }), execute: async () => (called++, 'sunny') });
      const withTool = new Agent({ name: 't', model, tools: [getWeather], modelSettings: { temperature: 0 } });
      const tr = await runner.run(withTool, 'Weather? [sim:tool=get_weather]', { maxTurns: 2 }).catch((e) => e);
      t.ok(called >= 1, `the tool ran and its result went back: ${tr instanceof Error ? tr.message : JSON.stringify(tr.finalOutput)}`);
      t.ok(tr instanceof Error ? /max turns/i.test(tr.message) : true, 'the simulator keeps calling the tool: the run stops at maxTurns');
      const typed = new Agent({ name: 'o', model, outputType: Recipe });
      const out = await runner.run(typed, 'A recipe');
      t.equal(typeof out.finalOutput!.title, 'string');
    });
  }

  // The Agents SDK lets the model client's errors through: openai's classes, with the gateway's status, param and message.
  const badClient = new OpenAI({ apiKey: 'tg_nope', baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const refusals = [
    // The responses model sends a runner's conversationId as `conversation`; the chat completions model sends modelSettings.store.
    ['Agents SDK (responses)', new OpenAIResponsesModel(badClient, 'swift'), new OpenAIResponsesModel(openaiClient, 'swift'), {}, { conversationId: 'conv_1' },
      'conversation', /^400 `conversation` is not accepted: it names a conversation stored in the supplier account/],
    ['Agents SDK (chat completions)', new OpenAIChatCompletionsModel(badClient, 'swift'), new OpenAIChatCompletionsModel(openaiClient, 'swift'), { store: true }, {},
      'store', /^400 `store` must be false: Tollgate keeps nothing/],
  ] as const;
  for (const [name, badModel, model, modelSettings, runOptions, param, message] of refusals) {
    t.test(`${name}: error classes: a bad key, a member refused by name (its message), unary and streamed`, async (t) => {
      const unauthorized = await runner.run(new Agent({ name: 'k', model: badModel }), 'Hi').catch((e) => e);
      t.ok(unauthorized instanceof OpenAI.AuthenticationError, `AuthenticationError: ${unauthorized}`);
      t.same([unauthorized.status, unauthorized.message], [401, '401 The request did not present a valid API key.']);
      const agent = new Agent({ name: 'r', model, modelSettings });
      const refused = await runner.run(agent, 'Hi', runOptions).catch((e) => e);
      t.ok(refused instanceof OpenAI.BadRequestError, `BadRequestError: ${refused}`);
      t.equal(refused.param, param);
      t.match(refused.message, message);
      const streamed = await runner.run(agent, 'Hi', { ...runOptions, stream: true });
      const streamedError = await streamed.completed.then(() => null, (e) => e);
      t.ok(streamedError instanceof OpenAI.BadRequestError, `streamed: ${streamedError}`);
      t.match(streamedError?.message, message);
    });
  }
}
