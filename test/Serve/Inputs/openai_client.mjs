// node openai_client.mjs --openai DIR --base-url http://127.0.0.1:PORT/v1
//     --model ID [--api-key KEY] [--prompt 1,2,3] [--max-tokens N]
//     [--no-completions] [--tokenizer-mode ids|text] [--text STR]
//     [--sample T,P,SEED] [--chat] [--chat-message STR]
//     [--embeddings] [--embedding-input STR] [--expect-embedding FILE]
//     [--dump DIR]
//
// Talks to `NAME serve` with OpenAI's official JavaScript client (the npm
// package `openai` in DIR) as an application would, and prints one stable
// line per check, for FileCheck. What the server returns is checked here
// against itself where the API says how its parts relate (usage against
// token_ids and the prompt, a stream against the same request unstreamed,
// one id and created time for a stream's chunks, the raw SSE body (its
// copy, teed from the client's fetch) ending with `data: [DONE]`, base64
// embeddings (the client's default) against floats, a stop string against the
// text without it); what it generates is written under --dump DIR, in the
// format of `NAME generate`'s output, for the test to diff with the solo
// CLI's:
//   completion-ids.txt  the ids of --prompt, temperature 0, --max-tokens
//   sampled-ids.txt     the same with --sample T,P,SEED (temperature, top_p,
//                       seed)
//   text.txt            the text of --text (--tokenizer-mode text),
//                       temperature 0, and a newline
//   chat.txt            the reply to --chat-message (--chat), and a newline
//   embedding.json      the embedding of --embedding-input (--embeddings)
// and --expect-embedding FILE, the output of `NAME run --tokenizer DIR
// --text STR --pooling P` (a line `embedding 0: V V ...`, 7 significant
// digits), is compared here: |got - expected| <= 1e-6 * max(1, |expected|).
// The modes: completions (unless --no-completions: a GPT-2-like program),
// --chat (a program with a chat template), --embeddings (an encoder).
// Errors, last: an unknown model, temperature -1, max_tokens 0 (400, with
// their param), a wrong and a missing API key with --api-key (401), and
// malformed JSON (400). Exit 0 when every check passed, 1 otherwise.
import fs from 'fs';
import path from 'path';
import {
  parseArgs, die, integer, idList, importOpenAI, capturingFetch, sseData,
} from './openai_lib.mjs';

const usage = `usage: node openai_client.mjs --openai DIR --base-url URL --model ID
  [--api-key KEY] [--prompt 1,2,3] [--max-tokens N] [--no-completions]
  [--tokenizer-mode ids|text] [--text STR] [--sample T,P,SEED]
  [--chat] [--chat-message STR] [--embeddings] [--embedding-input STR]
  [--expect-embedding FILE] [--dump DIR]`;
const args = parseArgs(process.argv.slice(2),
  ['--openai', '--base-url', '--model', '--api-key', '--prompt', '--max-tokens',
    '--tokenizer-mode', '--text', '--sample', '--chat-message', '--embedding-input',
    '--expect-embedding', '--dump'],
  ['--no-completions', '--chat', '--embeddings'], usage);
for (const required of ['base-url', 'model'])
  if (!args[required])
    die(`--${required} is required\n${usage}`, 2);
const mode = args['tokenizer-mode'] || 'ids';
if (mode !== 'ids' && mode !== 'text')
  die(`--tokenizer-mode is ids or text, got ${JSON.stringify(mode)}`, 2);
const model = args.model;
const prompt = idList(args.prompt || '1,2,3', '--prompt');
const maxTokens = integer(args, 'max-tokens', 8);
const text = args.text ?? 'Hello world';
let sample = null;
if (args.sample) {
  const parts = args.sample.split(',');
  if (parts.length !== 3 || parts.some(p => !/^[0-9.]+$/.test(p)))
    die(`--sample expects TEMPERATURE,TOP_P,SEED, got ${JSON.stringify(args.sample)}`, 2);
  sample = { temperature: Number(parts[0]), top_p: Number(parts[1]), seed: Number(parts[2]) };
}
const chatMessage = args['chat-message'] ?? 'Hello! Who are you?';
const embeddingInput = args['embedding-input'] ?? 'Hello world';
const completions = !args['no-completions'];
if (args.dump)
  fs.mkdirSync(args.dump, { recursive: true });

const { module: openai } = await importOpenAI(args.openai);
const OpenAI = openai.OpenAI || openai.default;
const { APIError } = openai;
const captures = [];
const apiKey = args['api-key'] ?? 'no-key';
const makeClient = key => new OpenAI({
  apiKey: key, baseURL: args['base-url'], maxRetries: 0, timeout: 120000,
  fetch: capturingFetch(captures),
});
const client = makeClient(apiKey);
const root = args['base-url'].replace(/\/v1\/?$/, '');

let failures = 0;
class CheckError extends Error {}
function expect(condition, message) {
  if (!condition)
    throw new CheckError(message);
}
const json = JSON.stringify;
const same = (a, b) => json(a) === json(b);
async function check(name, body) {
  try {
    const line = await body();
    process.stdout.write(`${name}: ${line}\n`);
  } catch (error) {
    ++failures;
    const what = error instanceof CheckError ? error.message
      : `${error.constructor.name}: ${error.message}`;
    process.stdout.write(`${name}: FAIL: ${what}\n`);
  }
}
function dump(file, content) {
  if (args.dump)
    fs.writeFileSync(path.join(args.dump, file), content);
}

/// The raw body of the one streamed response since `captures` held
/// `before`: its events must be JSON chunks and end with exactly one
/// `data: [DONE]`.
async function streamBody(before) {
  expect(captures.length === before + 1,
    `${captures.length - before} text/event-stream responses for one streamed request`);
  const captured = await captures[before];
  expect(!captured.error, `the stream's body failed: ${captured.error && captured.error.message}`);
  const events = sseData(captured.text);
  expect(events.length >= 2, `the stream has ${events.length} events`);
  expect(events[events.length - 1] === '[DONE]',
    `the stream's last event is ${json(events[events.length - 1])}, not [DONE]`);
  for (const event of events.slice(0, -1)) {
    expect(event !== '[DONE]', 'the stream has [DONE] before its end');
    try {
      JSON.parse(event);
    } catch (error) {
      throw new CheckError(`a stream event is not JSON: ${json(event)}`);
    }
  }
  return events;
}

/// Every chunk of a stream has one id, created time and model.
function sameStream(first, chunk) {
  expect(typeof chunk.id === 'string' && chunk.id.length > 0, 'a chunk has no id');
  expect(chunk.model === model, `a chunk's model is ${json(chunk.model)}`);
  expect(Number.isInteger(chunk.created), `a chunk's created is ${json(chunk.created)}`);
  if (first)
    expect(chunk.id === first.id && chunk.created === first.created,
      `chunks of one stream have ids ${first.id} and ${chunk.id}, created ${first.created} and ${chunk.created}`);
  return first || chunk;
}

/// created: Unix seconds, within 10 minutes of this machine's clock.
function checkCreated(created) {
  expect(Number.isInteger(created) && Math.abs(created - Date.now() / 1000) < 600,
    `created is ${json(created)}, not the Unix time now`);
}

function isIds(value) {
  return Array.isArray(value) && value.every(v => Number.isInteger(v) && v >= 0);
}

/// A non-streamed completion or chat choice: finish_reason and usage as the
/// API defines them (completion_tokens are the generated ids: "length"
/// exactly when max_tokens of them were generated, unless the last was an
/// eos or ended a stop string).
function checkUsage(usage, promptTokens, completionTokens) {
  expect(usage && typeof usage === 'object', `no usage: ${json(usage)}`);
  if (promptTokens !== null)
    expect(usage.prompt_tokens === promptTokens,
      `usage.prompt_tokens is ${usage.prompt_tokens}, the prompt has ${promptTokens} ids`);
  expect(usage.completion_tokens === completionTokens,
    `usage.completion_tokens is ${usage.completion_tokens}, ${completionTokens} ids were generated`);
  expect(usage.total_tokens === usage.prompt_tokens + usage.completion_tokens,
    `usage.total_tokens is ${usage.total_tokens}, not ${usage.prompt_tokens} + ${usage.completion_tokens}`);
}
function checkFinish(finish, generated, limit, stopped = false) {
  expect(finish === 'stop' || finish === 'length', `finish_reason is ${json(finish)}`);
  if (generated < limit || stopped)
    expect(finish === 'stop', `finish_reason is ${finish} after ${generated} of ${limit} tokens`);
  else if (finish === 'stop')
    // Only an eos as the last token: not in these tests' programs.
    expect(false, `finish_reason is stop after all ${limit} tokens`);
}
const usageText = u => `usage ${u.prompt_tokens}+${u.completion_tokens}=${u.total_tokens}`;

/// A completion, checked: one choice, index 0, token_ids, usage.
async function complete(params) {
  const response = await client.completions.create(params);
  expect(response.object === 'text_completion', `object is ${json(response.object)}`);
  expect(response.model === model, `model is ${json(response.model)}, not ${json(model)}`);
  expect(typeof response.id === 'string' && response.id.length > 0, 'no id');
  checkCreated(response.created);
  expect(Array.isArray(response.choices) && response.choices.length === 1,
    `${json(response.choices && response.choices.length)} choices`);
  const choice = response.choices[0];
  expect(choice.index === 0, `choice index ${choice.index}`);
  expect(typeof choice.text === 'string', `text is ${json(choice.text)}`);
  expect(isIds(choice.token_ids), `token_ids is ${json(choice.token_ids)}`);
  expect(choice.token_ids.length <= params.max_tokens,
    `${choice.token_ids.length} token_ids for max_tokens ${params.max_tokens}`);
  checkUsage(response.usage, Array.isArray(params.prompt) && Number.isInteger(params.prompt[0])
    ? params.prompt.length : null, choice.token_ids.length);
  return { choice, usage: response.usage };
}

/// The same request streamed (with usage): its text, token_ids,
/// finish_reason and usage, from chunks whose form is checked.
async function completeStreamed(params) {
  const before = captures.length;
  const stream = await client.completions.create({
    ...params, stream: true, stream_options: { include_usage: true },
  });
  let text = '', ids = [], finish = null, usage = null, chunks = 0, idsEverywhere = true, first = null;
  for await (const chunk of stream) {
    ++chunks;
    expect(chunk.object === 'text_completion', `chunk object is ${json(chunk.object)}`);
    first = sameStream(first, chunk);
    expect(usage === null, 'a chunk after the usage chunk');
    if (chunk.usage) {
      expect(chunk.choices.length === 0, 'the usage chunk has choices');
      usage = chunk.usage;
      continue;
    }
    expect(chunk.choices.length === 1 && chunk.choices[0].index === 0,
      `chunk choices: ${json(chunk.choices)}`);
    const choice = chunk.choices[0];
    expect(finish === null, 'a chunk after the one with finish_reason');
    text += choice.text;
    if (choice.token_ids === undefined)
      idsEverywhere = false;
    else {
      expect(isIds(choice.token_ids), `chunk token_ids is ${json(choice.token_ids)}`);
      ids = ids.concat(choice.token_ids);
    }
    if (choice.finish_reason !== null && choice.finish_reason !== undefined)
      finish = choice.finish_reason;
  }
  const events = await streamBody(before);
  expect(events.length === chunks + 1, `${events.length} events for ${chunks} chunks`);
  expect(finish !== null, 'no chunk has a finish_reason');
  expect(usage !== null, 'no usage chunk (stream_options.include_usage)');
  expect(idsEverywhere, 'a chunk has no token_ids');
  return { text, ids, finish, usage, chunks };
}

function compareStream(streamed, plain) {
  expect(streamed.text === plain.choice.text,
    `streamed text ${json(streamed.text)} != ${json(plain.choice.text)}`);
  expect(same(streamed.ids, plain.choice.token_ids),
    `streamed token_ids ${json(streamed.ids)} != ${json(plain.choice.token_ids)}`);
  expect(streamed.finish === plain.choice.finish_reason,
    `streamed finish_reason ${streamed.finish} != ${plain.choice.finish_reason}`);
  expect(same(streamed.usage, plain.usage),
    `streamed usage ${json(streamed.usage)} != ${json(plain.usage)}`);
}

// --- the server ---
await check('health', async () => {
  const response = await fetch(`${root}/health`);
  return `${response.status} ${json(await response.json())}`;
});
await check('models', async () => {
  const page = await client.models.list();
  const ids = page.data.map(m => m.id);
  expect(same(ids, [model]), `the models are ${json(ids)}, not [${json(model)}]`);
  expect(page.data[0].object === 'model', `object is ${json(page.data[0].object)}`);
  const one = await client.models.retrieve(model).catch(error => error);
  // GET /v1/models/ID is optional in this server: only say what it did.
  const retrieved = one instanceof APIError ? `retrieve ${one.status}` : `retrieve ${one.id}`;
  return `${ids.join(' ')} (${retrieved})`;
});

// --- /v1/completions ---
if (completions) {
  const greedy = { model, prompt, max_tokens: maxTokens, temperature: 0 };
  let plain = null;
  await check('completion', async () => {
    plain = await complete(greedy);
    const { choice, usage } = plain;
    checkFinish(choice.finish_reason, choice.token_ids.length, maxTokens);
    dump('completion-ids.txt', choice.token_ids.join(' ') + '\n');
    process.stdout.write(`completion token_ids: ${choice.token_ids.join(' ')}\n`);
    return `${choice.token_ids.length} token_ids, finish_reason ${choice.finish_reason}, ${usageText(usage)}`;
  });
  await check('completion again', async () => {
    expect(plain, 'no first completion');
    const again = await complete(greedy);
    expect(same(again.choice.token_ids, plain.choice.token_ids),
      `token_ids ${json(again.choice.token_ids)} != ${json(plain.choice.token_ids)}`);
    return 'the same token_ids';
  });
  await check('completion stream', async () => {
    expect(plain, 'no completion to compare with');
    const streamed = await completeStreamed(greedy);
    compareStream(streamed, plain);
    return `text, token_ids, finish_reason and usage equal the unstreamed ones; ends with [DONE]`;
  });
  if (sample) {
    const sampled = { model, prompt, max_tokens: maxTokens, ...sample };
    await check('sampled', async () => {
      const first = await complete(sampled);
      checkFinish(first.choice.finish_reason, first.choice.token_ids.length, maxTokens);
      const second = await complete(sampled);
      expect(same(first.choice.token_ids, second.choice.token_ids),
        `seed ${sample.seed} gave ${json(first.choice.token_ids)}, then ${json(second.choice.token_ids)}`);
      const streamed = await completeStreamed(sampled);
      compareStream(streamed, first);
      dump('sampled-ids.txt', first.choice.token_ids.join(' ') + '\n');
      process.stdout.write(`sampled token_ids: ${first.choice.token_ids.join(' ')}\n`);
      return `temperature ${sample.temperature} top_p ${sample.top_p} seed ${sample.seed}: ` +
        `${first.choice.token_ids.length} token_ids, the same twice and streamed`;
    });
  }
  if (mode === 'text') {
    const request = { model, prompt: text, max_tokens: maxTokens, temperature: 0 };
    let textPlain = null;
    await check('text completion', async () => {
      textPlain = await complete(request);
      const { choice, usage } = textPlain;
      checkFinish(choice.finish_reason, choice.token_ids.length, maxTokens);
      dump('text.txt', choice.text + '\n');
      process.stdout.write(`text completion text: ${json(choice.text)}\n`);
      return `prompt ${json(text)}: ${choice.token_ids.length} token_ids, ` +
        `finish_reason ${choice.finish_reason}, ${usageText(usage)}`;
    });
    await check('text completion [string]', async () => {
      expect(textPlain, 'no text completion to compare with');
      const listed = await complete({ ...request, prompt: [text] });
      expect(listed.choice.text === textPlain.choice.text,
        `text ${json(listed.choice.text)} != ${json(textPlain.choice.text)}`);
      expect(same(listed.choice.token_ids, textPlain.choice.token_ids), 'token_ids differ');
      expect(same(listed.usage, textPlain.usage), 'usage differs');
      return 'the same as the string';
    });
    await check('text completion stream', async () => {
      expect(textPlain, 'no text completion to compare with');
      compareStream(await completeStreamed(request), textPlain);
      return 'text, token_ids, finish_reason and usage equal the unstreamed ones; ends with [DONE]';
    });
    // A stop string from the middle of the text: the text is cut before
    // its first occurrence, finish_reason "stop", and the token_ids are a
    // prefix of the unstopped ones (the one that completed it included).
    await check('stop', async () => {
      expect(textPlain, 'no text completion to compare with');
      const full = textPlain.choice.text;
      const chars = Array.from(full);
      expect(chars.length >= 4, `the text ${json(full)} is too short for a stop string`);
      const middle = Math.floor(chars.length / 2);
      let stop = chars.slice(middle, middle + 2).join('');
      const at = full.indexOf(stop);
      const cut = full.slice(0, at);
      const stopped = await complete({ ...request, stop: [stop] });
      const { choice } = stopped;
      expect(choice.text === cut, `with stop ${json(stop)} the text is ${json(choice.text)}, not ${json(cut)}`);
      expect(choice.finish_reason === 'stop', `finish_reason is ${choice.finish_reason}`);
      const prefix = textPlain.choice.token_ids.slice(0, choice.token_ids.length);
      expect(choice.token_ids.length > 0 && same(choice.token_ids, prefix),
        `token_ids ${json(choice.token_ids)} are not a prefix of ${json(textPlain.choice.token_ids)}`);
      const streamed = await completeStreamed({ ...request, stop: stop });
      compareStream(streamed, stopped);
      return `cuts the text before its first occurrence, finish_reason stop, streamed the same`;
    });
  }
}

// --- /v1/chat/completions ---
if (args.chat) {
  const request = {
    model, messages: [{ role: 'user', content: chatMessage }], max_tokens: maxTokens, temperature: 0,
  };
  let plain = null;
  await check('chat', async () => {
    const response = await client.chat.completions.create(request);
    expect(response.object === 'chat.completion', `object is ${json(response.object)}`);
    expect(typeof response.id === 'string' && response.id.length > 0, 'no id');
    checkCreated(response.created);
    expect(response.model === model, `model is ${json(response.model)}`);
    expect(response.choices.length === 1 && response.choices[0].index === 0,
      `choices: ${json(response.choices)}`);
    const choice = response.choices[0];
    expect(choice.message.role === 'assistant', `role is ${json(choice.message.role)}`);
    expect(typeof choice.message.content === 'string', `content is ${json(choice.message.content)}`);
    checkUsage(response.usage, null, response.usage.completion_tokens);
    expect(response.usage.completion_tokens <= maxTokens,
      `${response.usage.completion_tokens} completion tokens for max_tokens ${maxTokens}`);
    if (choice.token_ids !== undefined) {
      expect(isIds(choice.token_ids), `token_ids is ${json(choice.token_ids)}`);
      expect(choice.token_ids.length === response.usage.completion_tokens,
        `${choice.token_ids.length} token_ids, usage.completion_tokens ${response.usage.completion_tokens}`);
    }
    checkFinish(choice.finish_reason, response.usage.completion_tokens, maxTokens);
    plain = { content: choice.message.content, finish: choice.finish_reason, usage: response.usage };
    dump('chat.txt', choice.message.content + '\n');
    process.stdout.write(`chat content: ${json(choice.message.content)}\n`);
    return `role assistant, finish_reason ${choice.finish_reason}, ${usageText(response.usage)}`;
  });
  await check('chat stream', async () => {
    expect(plain, 'no chat completion to compare with');
    const before = captures.length;
    const stream = await client.chat.completions.create({
      ...request, stream: true, stream_options: { include_usage: true },
    });
    let content = '', role = null, finish = null, usage = null, chunks = 0, first = null;
    for await (const chunk of stream) {
      ++chunks;
      expect(chunk.object === 'chat.completion.chunk', `chunk object is ${json(chunk.object)}`);
      first = sameStream(first, chunk);
      expect(usage === null, 'a chunk after the usage chunk');
      if (chunk.usage) {
        expect(chunk.choices.length === 0, 'the usage chunk has choices');
        usage = chunk.usage;
        continue;
      }
      expect(chunk.choices.length === 1, `chunk choices: ${json(chunk.choices)}`);
      const { delta, finish_reason } = chunk.choices[0];
      expect(finish === null, 'a chunk after the one with finish_reason');
      if (delta.role !== undefined) {
        expect(role === null && chunks === 1, 'role in a chunk after the first');
        role = delta.role;
      }
      content += delta.content ?? '';
      if (finish_reason)
        finish = finish_reason;
    }
    const events = await streamBody(before);
    expect(events.length === chunks + 1, `${events.length} events for ${chunks} chunks`);
    expect(role === 'assistant', `the first delta's role is ${json(role)}`);
    expect(content === plain.content, `streamed content ${json(content)} != ${json(plain.content)}`);
    expect(finish === plain.finish, `streamed finish_reason ${finish} != ${plain.finish}`);
    expect(same(usage, plain.usage), `streamed usage ${json(usage)} != ${json(plain.usage)}`);
    return 'role assistant first, content, finish_reason and usage equal the unstreamed ones; ends with [DONE]';
  });
}

// --- /v1/embeddings ---
if (args.embeddings) {
  await check('embeddings', async () => {
    // The client asks for base64 unless told (and decodes it to floats).
    const b64 = await client.embeddings.create({ model, input: embeddingInput });
    const floats = await client.embeddings.create({ model, input: embeddingInput, encoding_format: 'float' });
    for (const response of [b64, floats]) {
      expect(response.object === 'list', `object is ${json(response.object)}`);
      expect(response.model === model, `model is ${json(response.model)}`);
      expect(response.data.length === 1 && response.data[0].index === 0 &&
        response.data[0].object === 'embedding', `data: ${json(response.data).slice(0, 200)}`);
      expect(response.usage && response.usage.prompt_tokens > 0 &&
        response.usage.total_tokens === response.usage.prompt_tokens, `usage ${json(response.usage)}`);
    }
    const a = Array.from(b64.data[0].embedding), b = floats.data[0].embedding;
    expect(Array.isArray(b) && b.every(v => typeof v === 'number' && Number.isFinite(v)),
      'the float embedding is not an array of numbers');
    expect(a.length === b.length && a.length > 0, `base64 gives ${a.length} values, float ${b.length}`);
    const differ = a.findIndex((v, i) => v !== Math.fround(b[i]));
    expect(differ < 0, `value ${differ}: base64 ${a[differ]}, float ${b[differ]}`);
    const batch = await client.embeddings.create({
      model, input: [embeddingInput, embeddingInput + ' again'], encoding_format: 'float',
    });
    expect(batch.data.length === 2 && batch.data[0].index === 0 && batch.data[1].index === 1,
      'a batch of 2 does not give indices 0 and 1');
    expect(same(batch.data[0].embedding, b), 'the batch\'s first embedding differs from the single one');
    expect(!same(batch.data[1].embedding, b), 'two inputs have the same embedding');
    dump('embedding.json', json(b) + '\n');
    let versus = '';
    if (args['expect-embedding']) {
      const line = fs.readFileSync(args['expect-embedding'], 'utf-8').split('\n')
        .find(l => l.startsWith('embedding 0: '));
      expect(line, `${args['expect-embedding']} has no line "embedding 0: ..."`);
      const expected = line.slice('embedding 0: '.length).trim().split(/\s+/).map(Number);
      expect(expected.length === b.length, `${b.length} values, run --pooling gives ${expected.length}`);
      let worst = 0;
      expected.forEach((e, i) => {
        worst = Math.max(worst, Math.abs(b[i] - e) / Math.max(1, Math.abs(e)));
      });
      expect(worst <= 1e-6, `differs from run --pooling by ${worst} (relative)`);
      versus = '; equal to run --pooling (1e-6)';
    }
    return `1 x ${a.length}, prompt_tokens ${floats.usage.prompt_tokens}; base64 equals float; ` +
      `a batch of 2: indices 0 1, the first equals the single${versus}`;
  });
}

// --- errors ---
const endpoint = completions ? 'completions' : args.chat ? 'chat' : 'embeddings';
function request(overrides, who = client) {
  if (endpoint === 'completions')
    return who.completions.create({ model, prompt, max_tokens: 1, temperature: 0, ...overrides });
  if (endpoint === 'chat')
    return who.chat.completions.create({
      model, messages: [{ role: 'user', content: chatMessage }], max_tokens: 1, temperature: 0, ...overrides,
    });
  return who.embeddings.create({ model, input: embeddingInput, encoding_format: 'float', ...overrides });
}
async function expectError(name, promise, status, param) {
  await check(name, async () => {
    const outcome = await promise.then(() => null, error => error);
    expect(outcome !== null, 'the request succeeded');
    expect(outcome instanceof APIError, `not an APIError: ${outcome}`);
    expect(outcome.status === status, `status ${outcome.status}, not ${status}: ${outcome.message}`);
    if (param !== undefined)
      expect(outcome.param === param, `param ${json(outcome.param)}, not ${json(param)}: ${outcome.message}`);
    expect(typeof outcome.error === 'object' && outcome.error !== null &&
      typeof outcome.error.message === 'string' && outcome.error.message.length > 0,
      `no error.message: ${json(outcome.error)}`);
    return `${outcome.status} ${outcome.constructor.name} param=${outcome.param} type=${outcome.type}`;
  });
}
await expectError('error unknown model', request({ model: 'no-such-model' }), 400, 'model');
if (endpoint !== 'embeddings') {
  await expectError('error temperature -1', request({ temperature: -1 }), 400, 'temperature');
  await expectError('error max_tokens 0', request({ max_tokens: 0 }), 400, 'max_tokens');
}
if (args['api-key']) {
  await expectError('error wrong API key', request({}, makeClient(apiKey + '-wrong')), 401);
  await check('error no API key', async () => {
    const response = await fetch(`${args['base-url']}/models`);
    const body = await response.json();
    expect(response.status === 401, `GET /v1/models without a key: ${response.status}`);
    expect(body.error && typeof body.error.message === 'string', `body ${json(body)}`);
    return `${response.status} type=${body.error.type}`;
  });
}
await check('error malformed JSON', async () => {
  const path = endpoint === 'completions' ? 'completions' : endpoint === 'chat' ? 'chat/completions' : 'embeddings';
  const response = await fetch(`${args['base-url']}/${path}`, {
    method: 'POST', body: '{"model": ', headers: {
      'content-type': 'application/json', authorization: `Bearer ${apiKey}`,
    },
  });
  const body = await response.json();
  expect(response.status === 400, `status ${response.status}`);
  expect(body.error && typeof body.error === 'object', `body ${json(body)}`);
  const keys = Object.keys(body.error).sort();
  expect(same(keys, ['code', 'message', 'param', 'type']), `error keys ${json(keys)}`);
  return `${response.status} type=${body.error.type}`;
});

process.stdout.write(failures ? `${failures} checks failed\n` : 'all checks passed\n');
process.exit(failures ? 1 : 0);
