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
// text without it, logprobs in the form of the client's types (completions'
// logprobs 2, chat's logprobs true with top_logprobs 2: each <= 0, the
// greedy token the most probable, the tokens joining into the text, streamed
// the same), n 2 (greedy: each choice the n 1 answer; sampled with the seed:
// choice 0 the n 1 answer; streamed, each index's chunks joining into its
// choice), logit_bias 100 forcing its token, presence_penalty and
// frequency_penalty changing a greedy answer that repeats a token); what it
// generates is written under --dump DIR, in the format of `NAME generate`'s
// output, for the test to diff with the solo CLI's:
//   completion-ids.txt  the ids of --prompt, temperature 0, --max-tokens
//   sampled-ids.txt     the same with --sample T,P,SEED (temperature, top_p,
//                       seed)
//   n2-completion-ids.txt  completion-ids.txt's request with n 2: a line a
//                       choice
//   n2-sampled-ids-0.txt   choice 0 of sampled-ids.txt's request with n 2
//   text.txt            the text of --text (--tokenizer-mode text),
//                       temperature 0, and a newline
//   chat.txt            the reply to --chat-message (--chat), and a newline
//   chat-n2.txt         its two replies with n 2, a line each
//   embedding.json      the embedding of --embedding-input (--embeddings)
// and --expect-embedding FILE, the output of `NAME run --tokenizer DIR
// --text STR --pooling P` (a line `embedding 0: V V ...`, 7 significant
// digits), is compared here: |got - expected| <= 1e-6 * max(1, |expected|).
// The modes: completions (unless --no-completions: a program with GPT-2's
// vocabulary, served with its tokenizer), --chat (a program with a chat
// template), --embeddings (an encoder). Errors, last: an unknown model,
// temperature -1, max_tokens 0, n 0 and 129, presence_penalty 2.5,
// frequency_penalty -3, a logit_bias of 101 or outside the vocabulary,
// completions' logprobs 6, chat's top_logprobs 21 or without logprobs (400,
// with their param), a wrong and a missing API key with --api-key (401), and
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

/// A completion, checked: params.n choices (1 unless given), index i at i,
/// token_ids, usage (the prompt once, every choice's ids).
async function completeAll(params) {
  const response = await client.completions.create(params);
  expect(response.object === 'text_completion', `object is ${json(response.object)}`);
  expect(response.model === model, `model is ${json(response.model)}, not ${json(model)}`);
  expect(typeof response.id === 'string' && response.id.length > 0, 'no id');
  checkCreated(response.created);
  const n = params.n ?? 1;
  expect(Array.isArray(response.choices) && response.choices.length === n,
    `${json(response.choices && response.choices.length)} choices for n ${n}`);
  let generated = 0;
  response.choices.forEach((choice, i) => {
    expect(choice.index === i, `choice ${i}'s index is ${choice.index}`);
    expect(typeof choice.text === 'string', `text is ${json(choice.text)}`);
    expect(isIds(choice.token_ids), `token_ids is ${json(choice.token_ids)}`);
    expect(choice.token_ids.length <= params.max_tokens,
      `${choice.token_ids.length} token_ids for max_tokens ${params.max_tokens}`);
    generated += choice.token_ids.length;
  });
  checkUsage(response.usage, Array.isArray(params.prompt) && Number.isInteger(params.prompt[0])
    ? params.prompt.length : null, generated);
  return { choices: response.choices, usage: response.usage };
}
async function complete(params) {
  const { choices, usage } = await completeAll(params);
  return { choice: choices[0], usage };
}

/// Completions' logprobs of consecutive chunks, joined (null: none yet).
function joinCompletionLogprobs(joined, more) {
  const keys = ['tokens', 'token_logprobs', 'top_logprobs', 'text_offset'];
  if (!joined)
    return Object.fromEntries(keys.map(key => [key, Array.from(more[key] ?? [])]));
  for (const key of keys)
    joined[key] = joined[key].concat(more[key] ?? []);
  return joined;
}

/// The same request streamed (with usage): each choice's text, token_ids,
/// finish_reason and logprobs (joined; null without any), and the usage,
/// from chunks whose form is checked. The first choice's are also the
/// result's own text, ids, finish and logprobs.
async function completeStreamed(params) {
  const before = captures.length;
  const stream = await client.completions.create({
    ...params, stream: true, stream_options: { include_usage: true },
  });
  const n = params.n ?? 1;
  const choices = Array.from({ length: n }, () => ({ text: '', ids: [], finish: null, logprobs: null }));
  let usage = null, chunks = 0, idsEverywhere = true, first = null;
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
    expect(chunk.choices.length >= 1, `chunk choices: ${json(chunk.choices)}`);
    for (const choice of chunk.choices) {
      expect(Number.isInteger(choice.index) && choice.index >= 0 && choice.index < n,
        `a chunk's choice index is ${json(choice.index)} for n ${n}`);
      const one = choices[choice.index];
      expect(one.finish === null, `a chunk of choice ${choice.index} after its finish_reason`);
      one.text += choice.text;
      if (choice.token_ids === undefined)
        idsEverywhere = false;
      else {
        expect(isIds(choice.token_ids), `chunk token_ids is ${json(choice.token_ids)}`);
        one.ids = one.ids.concat(choice.token_ids);
      }
      if (choice.logprobs)
        one.logprobs = joinCompletionLogprobs(one.logprobs, choice.logprobs);
      if (choice.finish_reason !== null && choice.finish_reason !== undefined)
        one.finish = choice.finish_reason;
    }
  }
  const events = await streamBody(before);
  expect(events.length === chunks + 1, `${events.length} events for ${chunks} chunks`);
  choices.forEach((one, i) => expect(one.finish !== null, `no chunk of choice ${i} has a finish_reason`));
  expect(usage !== null, 'no usage chunk (stream_options.include_usage)');
  expect(idsEverywhere, 'a chunk has no token_ids');
  return { ...choices[0], choices, usage, chunks };
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

/// Logprobs of two answers: the same tokens, texts and bytes, their figures
/// within 1e-6. The rows of a batch are not bit-identical across its
/// compositions (n's choices each run their own prefill, next to the
/// others' steps), so two requests' figures may differ in the last bits.
function nearLogprobs(a, b, where = '') {
  if (typeof a === 'number' && typeof b === 'number')
    return Math.abs(a - b) <= 1e-6 ? null : `${where}: ${a} vs ${b}`;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length)
      return `${where}: ${json(a)} vs ${json(b)}`;
    for (let i = 0; i < a.length; ++i) {
      const differ = nearLogprobs(a[i], b[i], `${where}[${i}]`);
      if (differ)
        return differ;
    }
    return null;
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const keys = Object.keys(a).sort();
    if (!same(keys, Object.keys(b).sort()))
      return `${where}: keys ${json(keys)} vs ${json(Object.keys(b).sort())}`;
    for (const key of keys) {
      const differ = nearLogprobs(a[key], b[key], `${where}.${key}`);
      if (differ)
        return differ;
    }
    return null;
  }
  return a === b ? null : `${where}: ${json(a)} vs ${json(b)}`;
}
function expectNearLogprobs(a, b, what) {
  const differ = nearLogprobs(a, b);
  expect(!differ, `${what} differ at ${differ}`);
}

/// A log-probability: a finite number <= 0 (OpenAI writes -infinity as -9999).
function checkLogprob(value, what) {
  expect(typeof value === 'number' && Number.isFinite(value) && value <= 0,
    `${what} is ${json(value)}, not a log-probability`);
}

/// A completion choice's logprobs for `logprobs: k`, in the form of OpenAI's
/// CompletionChoice.Logprobs: tokens, token_logprobs, top_logprobs and
/// text_offset, one entry per generated id each; the tokens join into the
/// text and text_offset[j] counts the characters (code points) of the tokens
/// before j (from the completion's start: docs/serving.md); each
/// top_logprobs[j] maps k tokens to their log-probabilities, and a greedy
/// choice's token is the most probable of them, with its own figure.
function checkCompletionLogprobs(choice, k, greedy) {
  const lp = choice.logprobs;
  expect(lp && typeof lp === 'object', `logprobs is ${json(lp)}`);
  const count = choice.token_ids.length;
  for (const key of ['tokens', 'token_logprobs', 'top_logprobs', 'text_offset'])
    expect(Array.isArray(lp[key]) && lp[key].length === count,
      `logprobs.${key} is ${json(lp[key])}, for ${count} token_ids`);
  expect(lp.tokens.every(t => typeof t === 'string'), `logprobs.tokens is ${json(lp.tokens)}`);
  expect(lp.tokens.join('') === choice.text,
    `logprobs.tokens ${json(lp.tokens)} do not join into the text ${json(choice.text)}`);
  let offset = 0;
  lp.tokens.forEach((token, j) => {
    checkLogprob(lp.token_logprobs[j], `token_logprobs[${j}]`);
    expect(lp.text_offset[j] === offset,
      `text_offset[${j}] is ${json(lp.text_offset[j])}; the tokens before it have ${offset} characters`);
    offset += Array.from(token).length;
    const top = lp.top_logprobs[j];
    expect(top && typeof top === 'object' && !Array.isArray(top), `top_logprobs[${j}] is ${json(top)}`);
    const entries = Object.entries(top);
    expect(entries.length === k, `top_logprobs[${j}] has ${entries.length} tokens, not ${k}: ${json(top)}`);
    entries.forEach(([t, v]) => checkLogprob(v, `top_logprobs[${j}][${json(t)}]`));
    if (greedy) {
      const best = Math.max(...entries.map(([, v]) => v));
      expect(Object.hasOwn(top, token) && top[token] === lp.token_logprobs[j] && top[token] === best,
        `greedy token ${j} ${json(token)} (${lp.token_logprobs[j]}) is not the most probable of top_logprobs ${json(top)}`);
    }
  });
}

/// A chat choice's logprobs for `logprobs: true, top_logprobs: k`, in the
/// form of OpenAI's ChatCompletionTokenLogprob: content, one entry per
/// generated token, each with its token, logprob, bytes (the token's UTF-8)
/// and k top_logprobs of the same form, most probable first; refusal null.
/// The tokens join into the message's content, and so do their bytes; a
/// greedy choice's token is its first alternative, with its figure.
function checkChatLogprobs(choice, k, greedy, count) {
  const lp = choice.logprobs;
  expect(lp && typeof lp === 'object', `logprobs is ${json(lp)}`);
  expect(lp.refusal === null, `logprobs.refusal is ${json(lp.refusal)}`);
  expect(Array.isArray(lp.content) && lp.content.length === count,
    `logprobs.content has ${json(lp.content && lp.content.length)} entries for ${count} tokens`);
  const checkToken = (entry, what) => {
    expect(entry && typeof entry.token === 'string', `${what} is ${json(entry)}`);
    checkLogprob(entry.logprob, `${what}.logprob`);
    expect(Array.isArray(entry.bytes) && entry.bytes.every(b => Number.isInteger(b) && b >= 0 && b < 256),
      `${what}.bytes is ${json(entry.bytes)}`);
    // A token that ends inside a character is U+FFFD here (docs/serving.md).
    if (!entry.token.includes('\ufffd'))
      expect(same(entry.bytes, Array.from(Buffer.from(entry.token, 'utf8'))),
        `${what}.bytes ${json(entry.bytes)} are not the UTF-8 of ${json(entry.token)}`);
  };
  lp.content.forEach((entry, j) => {
    checkToken(entry, `content[${j}]`);
    const top = entry.top_logprobs;
    expect(Array.isArray(top) && top.length === k, `content[${j}].top_logprobs is ${json(top)}, not ${k} tokens`);
    top.forEach((alt, a) => {
      checkToken(alt, `content[${j}].top_logprobs[${a}]`);
      expect(a === 0 || alt.logprob <= top[a - 1].logprob,
        `content[${j}].top_logprobs are not most probable first: ${json(top)}`);
    });
    if (greedy && k > 0)
      expect(entry.token === top[0].token && entry.logprob === top[0].logprob,
        `greedy token ${j} ${json(entry.token)} (${entry.logprob}) is not the most probable, ${json(top[0])}`);
  });
  const content = choice.message.content;
  const tokens = lp.content.map(e => e.token);
  expect(tokens.join('') === content, `logprobs' tokens ${json(tokens)} do not join into the content ${json(content)}`);
  if (!content.includes('\ufffd'))
    expect(Buffer.from(lp.content.flatMap(e => e.bytes)).toString('utf8') === content,
      'logprobs\' bytes do not join into the UTF-8 of the content');
}

/// One streamed choice against the same choice unstreamed: text (or
/// content), token_ids, finish_reason.
function compareChoice(streamed, plain, i) {
  expect(streamed.text === plain.text,
    `choice ${i}: streamed text ${json(streamed.text)} != ${json(plain.text)}`);
  expect(same(streamed.ids, plain.token_ids),
    `choice ${i}: streamed token_ids ${json(streamed.ids)} != ${json(plain.token_ids)}`);
  expect(streamed.finish === plain.finish_reason,
    `choice ${i}: streamed finish_reason ${streamed.finish} != ${plain.finish_reason}`);
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
  const sampled = { model, prompt, max_tokens: maxTokens, ...sample };
  let sampledPlain = null;
  if (sample) {
    await check('sampled', async () => {
      const first = await complete(sampled);
      sampledPlain = first;
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

  // OpenAI's logprobs, n, logit_bias and penalties, on the greedy request
  // (and the sampled one).
  await check('completion logprobs', async () => {
    expect(plain, 'no completion to compare with');
    expect(plain.choice.logprobs === null,
      `without logprobs a choice's logprobs is ${json(plain.choice.logprobs)}, not null`);
    const request = { ...greedy, logprobs: 2 };
    const got = await complete(request);
    const { choice } = got;
    expect(same(choice.token_ids, plain.choice.token_ids) && choice.text === plain.choice.text,
      `with logprobs 2 the answer is ${json(choice.token_ids)}, without ${json(plain.choice.token_ids)}`);
    checkCompletionLogprobs(choice, 2, true);
    const streamed = await completeStreamed(request);
    compareStream(streamed, got);
    expectNearLogprobs(streamed.logprobs, choice.logprobs, 'the stream\'s logprobs joined and the unstreamed ones');
    return `logprobs 2: ${choice.token_ids.length} tokens, token_logprobs, top_logprobs and text_offset; ` +
      'each <= 0, the greedy token the most probable of 2; the tokens join into the text, ' +
      'text_offset counts them; streamed, the chunks\' join the same';
  });
  await check('n 2 greedy', async () => {
    expect(plain, 'no completion to compare with');
    const request = { ...greedy, n: 2 };
    const got = await completeAll(request);
    got.choices.forEach((choice, i) => {
      checkFinish(choice.finish_reason, choice.token_ids.length, maxTokens);
      expect(same(choice.token_ids, plain.choice.token_ids) && choice.text === plain.choice.text,
        `choice ${i} is ${json(choice.token_ids)}, n 1 gave ${json(plain.choice.token_ids)}`);
    });
    dump('n2-completion-ids.txt', got.choices.map(c => c.token_ids.join(' ') + '\n').join(''));
    const streamed = await completeStreamed(request);
    streamed.choices.forEach((one, i) => compareChoice(one, got.choices[i], i));
    expect(same(streamed.usage, got.usage), `streamed usage ${json(streamed.usage)} != ${json(got.usage)}`);
    return `2 choices, each the n 1 answer, ${usageText(got.usage)}; streamed, each index's chunks join into its choice`;
  });
  if (sample)
    await check('n 2 sampled', async () => {
      expect(sampledPlain, 'no sampled completion to compare with');
      const request = { ...sampled, n: 2 };
      const got = await completeAll(request);
      const [zero, one] = got.choices;
      expect(same(zero.token_ids, sampledPlain.choice.token_ids),
        `choice 0 is ${json(zero.token_ids)}, n 1 with seed ${sample.seed} gave ${json(sampledPlain.choice.token_ids)}`);
      expect(!same(one.token_ids, zero.token_ids), `choice 1 drew choice 0's ${json(zero.token_ids)}`);
      dump('n2-sampled-ids-0.txt', zero.token_ids.join(' ') + '\n');
      const streamed = await completeStreamed(request);
      streamed.choices.forEach((choice, i) => compareChoice(choice, got.choices[i], i));
      expect(same(streamed.usage, got.usage), `streamed usage ${json(streamed.usage)} != ${json(got.usage)}`);
      return `seed ${sample.seed}: choice 0 is the n 1 answer, choice 1 differs, ${usageText(got.usage)}; ` +
        'streamed, each index\'s chunks join into its choice';
    });
  // 1332 is " test" in GPT-2's vocabulary (any id of the program's would do).
  const biased = 1332;
  await check('logit_bias', async () => {
    expect(plain, 'no completion to compare with');
    expect(!plain.choice.token_ids.includes(biased), `the greedy answer has ${biased} already`);
    const { choice } = await complete({ ...greedy, logit_bias: { [biased]: 100 } });
    expect(choice.token_ids.length === maxTokens && choice.token_ids.every(id => id === biased),
      `with logit_bias {"${biased}": 100} the ids are ${json(choice.token_ids)}`);
    return `{"${biased}": 100}: all ${choice.token_ids.length} ids are ${biased}, ${json(choice.text)}`;
  });
  await check('penalties', async () => {
    expect(plain, 'no completion to compare with');
    const ids = plain.choice.token_ids;
    const distinct = list => new Set(list).size;
    expect(distinct(ids) < ids.length, `the greedy answer ${json(ids)} repeats no token`);
    const answers = [];
    for (const [field, value] of [['presence_penalty', 1], ['frequency_penalty', 0.5], ['presence_penalty', -2]]) {
      const { choice } = await complete({ ...greedy, [field]: value });
      expect(!same(choice.token_ids, ids), `${field} ${value} gives the greedy answer ${json(ids)}`);
      answers.push(`${field} ${value}: ${distinct(choice.token_ids)}`);
    }
    return `greedy has ${distinct(ids)} distinct of ${ids.length} ids; ${answers.join(', ')}; each differs from greedy`;
  });
}

// --- /v1/chat/completions ---
/// A chat completion, checked: params.n choices (1 unless given), index i
/// at i, role assistant, content, usage (every choice's token_ids, where the
/// choices carry them).
async function chatAll(params) {
  const response = await client.chat.completions.create(params);
  expect(response.object === 'chat.completion', `object is ${json(response.object)}`);
  expect(typeof response.id === 'string' && response.id.length > 0, 'no id');
  checkCreated(response.created);
  expect(response.model === model, `model is ${json(response.model)}`);
  const n = params.n ?? 1;
  expect(Array.isArray(response.choices) && response.choices.length === n,
    `${json(response.choices && response.choices.length)} choices for n ${n}`);
  let generated = 0, idsEverywhere = true;
  response.choices.forEach((choice, i) => {
    expect(choice.index === i, `choice ${i}'s index is ${choice.index}`);
    expect(choice.message.role === 'assistant', `role is ${json(choice.message.role)}`);
    expect(typeof choice.message.content === 'string', `content is ${json(choice.message.content)}`);
    if (choice.token_ids === undefined)
      idsEverywhere = false;
    else {
      expect(isIds(choice.token_ids), `token_ids is ${json(choice.token_ids)}`);
      generated += choice.token_ids.length;
    }
  });
  checkUsage(response.usage, null, idsEverywhere ? generated : response.usage.completion_tokens);
  expect(response.usage.completion_tokens <= n * params.max_tokens,
    `${response.usage.completion_tokens} completion tokens for ${n} choices of max_tokens ${params.max_tokens}`);
  return { choices: response.choices, usage: response.usage };
}
/// How many tokens a chat choice generated.
const chatTokens = (choice, usage) => choice.token_ids?.length ?? usage.completion_tokens;

/// The same request streamed (with usage) through the client's iterator:
/// each choice's role, content, token_ids, finish_reason and logprobs'
/// content (joined; null without any), and the usage, from chunks whose
/// form is checked. The first choice's are also the result's own.
async function chatStreamed(params) {
  const before = captures.length;
  const stream = await client.chat.completions.create({
    ...params, stream: true, stream_options: { include_usage: true },
  });
  const n = params.n ?? 1;
  const choices = Array.from({ length: n },
    () => ({ role: null, content: '', ids: [], finish: null, logprobs: null, chunks: 0 }));
  let usage = null, chunks = 0, first = null;
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
    expect(chunk.choices.length >= 1, `chunk choices: ${json(chunk.choices)}`);
    for (const { index, delta, finish_reason, logprobs, token_ids } of chunk.choices) {
      expect(Number.isInteger(index) && index >= 0 && index < n,
        `a chunk's choice index is ${json(index)} for n ${n}`);
      const one = choices[index];
      ++one.chunks;
      expect(one.finish === null, `a chunk of choice ${index} after its finish_reason`);
      if (delta.role !== undefined) {
        expect(one.role === null && one.chunks === 1, `role in a chunk of choice ${index} after its first`);
        one.role = delta.role;
      }
      one.content += delta.content ?? '';
      if (token_ids !== undefined) {
        expect(isIds(token_ids), `chunk token_ids is ${json(token_ids)}`);
        one.ids = one.ids.concat(token_ids);
      }
      if (logprobs) {
        expect(Array.isArray(logprobs.content), `a chunk's logprobs.content is ${json(logprobs.content)}`);
        one.logprobs = (one.logprobs ?? []).concat(logprobs.content);
      }
      if (finish_reason)
        one.finish = finish_reason;
    }
  }
  const events = await streamBody(before);
  expect(events.length === chunks + 1, `${events.length} events for ${chunks} chunks`);
  choices.forEach((one, i) => {
    expect(one.role === 'assistant', `choice ${i}'s first delta's role is ${json(one.role)}`);
    expect(one.finish !== null, `no chunk of choice ${i} has a finish_reason`);
  });
  return { ...choices[0], choices, usage, chunks };
}

if (args.chat) {
  const request = {
    model, messages: [{ role: 'user', content: chatMessage }], max_tokens: maxTokens, temperature: 0,
  };
  let plain = null;
  await check('chat', async () => {
    const response = await chatAll(request);
    const choice = response.choices[0];
    checkFinish(choice.finish_reason, response.usage.completion_tokens, maxTokens);
    plain = {
      content: choice.message.content, finish: choice.finish_reason, usage: response.usage,
      logprobs: choice.logprobs,
    };
    dump('chat.txt', choice.message.content + '\n');
    process.stdout.write(`chat content: ${json(choice.message.content)}\n`);
    return `role assistant, finish_reason ${choice.finish_reason}, ${usageText(response.usage)}`;
  });
  await check('chat stream', async () => {
    expect(plain, 'no chat completion to compare with');
    const { content, finish, usage } = await chatStreamed(request);
    expect(content === plain.content, `streamed content ${json(content)} != ${json(plain.content)}`);
    expect(finish === plain.finish, `streamed finish_reason ${finish} != ${plain.finish}`);
    expect(same(usage, plain.usage), `streamed usage ${json(usage)} != ${json(plain.usage)}`);
    return 'role assistant first, content, finish_reason and usage equal the unstreamed ones; ends with [DONE]';
  });
  // OpenAI's logprobs (with top_logprobs) and n.
  const withLogprobs = { ...request, logprobs: true, top_logprobs: 2 };
  let logprobsChoice = null;
  await check('chat logprobs', async () => {
    expect(plain, 'no chat completion to compare with');
    expect(plain.logprobs === null, `without logprobs a choice's logprobs is ${json(plain.logprobs)}, not null`);
    const { choices, usage } = await chatAll(withLogprobs);
    const choice = choices[0];
    expect(choice.message.content === plain.content && choice.finish_reason === plain.finish,
      `with logprobs the content is ${json(choice.message.content)}, without ${json(plain.content)}`);
    const count = chatTokens(choice, usage);
    checkChatLogprobs(choice, 2, true, count);
    logprobsChoice = choice;
    const streamed = await chatStreamed(withLogprobs);
    expect(streamed.content === plain.content, `streamed content ${json(streamed.content)} != ${json(plain.content)}`);
    expectNearLogprobs(streamed.logprobs, choice.logprobs.content,
      'the stream\'s logprobs joined and the unstreamed ones');
    return `logprobs true, top_logprobs 2: ${count} tokens with token, logprob, bytes and top_logprobs; ` +
      'each <= 0, most probable first, the greedy token the first; the tokens and their bytes join into the ' +
      'content; streamed, the chunks\' join the same';
  });
  await check('chat n 2', async () => {
    expect(plain && logprobsChoice, 'no chat completion with logprobs to compare with');
    const twice = { ...withLogprobs, n: 2 };
    const got = await chatAll(twice);
    got.choices.forEach((choice, i) => {
      expect(choice.message.content === plain.content && choice.finish_reason === plain.finish,
        `choice ${i}'s content is ${json(choice.message.content)}, n 1 gave ${json(plain.content)}`);
      expectNearLogprobs(choice.logprobs, logprobsChoice.logprobs, `choice ${i}'s logprobs and n 1's`);
    });
    expect(got.usage.prompt_tokens === plain.usage.prompt_tokens &&
      got.usage.completion_tokens === 2 * plain.usage.completion_tokens,
      `usage ${json(got.usage)} for n 2, n 1 has ${json(plain.usage)}`);
    dump('chat-n2.txt', got.choices.map(c => c.message.content + '\n').join(''));
    const streamed = await chatStreamed(twice);
    streamed.choices.forEach((one, i) => {
      const choice = got.choices[i];
      expect(one.content === choice.message.content && one.finish === choice.finish_reason,
        `choice ${i} streamed: ${json(one.content)} (${one.finish}), unstreamed ${json(choice.message.content)} (${choice.finish_reason})`);
      expectNearLogprobs(one.logprobs, choice.logprobs.content,
        `choice ${i}'s streamed logprobs joined and the unstreamed ones`);
    });
    expect(same(streamed.usage, got.usage), `streamed usage ${json(streamed.usage)} != ${json(got.usage)}`);
    return `2 choices, each the n 1 answer with its logprobs, ${usageText(got.usage)}; streamed, each ` +
      'index\'s chunks join into its choice';
  });
  // The client's own accumulator of a stream, chat.completions.stream, as
  // an application that wants the whole completion at the end calls it: its
  // final completion must be the unstreamed one, logprobs included.
  await check('chat stream helper', async () => {
    expect(plain && logprobsChoice, 'no chat completion with logprobs to compare with');
    for (const n of [1, 2]) {
      const params = { ...withLogprobs, n };
      const got = await chatAll(params);
      const final = await client.chat.completions.stream({
        ...params, stream_options: { include_usage: true },
      }).finalChatCompletion();
      expect(final.choices.length === n, `n ${n}: chat.completions.stream gives ${final.choices.length} choices`);
      final.choices.forEach((choice, i) => {
        const expected = got.choices[i];
        expect(choice.index === i && choice.message.role === 'assistant' &&
          choice.message.content === expected.message.content && choice.finish_reason === expected.finish_reason,
          `n ${n}: chat.completions.stream's choice ${i} is ${json(choice).slice(0, 300)}`);
        const tokens = lp => lp && lp.content && lp.content.map(e => e.token);
        expect(choice.logprobs && choice.logprobs.content.length === expected.logprobs.content.length,
          `n ${n}: chat.completions.stream's choice ${i} has ${json(choice.logprobs && choice.logprobs.content.length)} ` +
          `logprobs entries for ${expected.logprobs.content.length} tokens: ${json(tokens(choice.logprobs))}, ` +
          `unstreamed ${json(tokens(expected.logprobs))}`);
        expectNearLogprobs(choice.logprobs, expected.logprobs,
          `n ${n}: chat.completions.stream's choice ${i}'s logprobs and the unstreamed ones`);
      });
      expect(same(final.usage, got.usage), `n ${n}: chat.completions.stream's usage ${json(final.usage)}`);
    }
    return 'n 1 and n 2: the final completion\'s choices, logprobs and usage equal the unstreamed ones';
  });
  await check('chat json_schema', async () => {
    const schema = {
      type: 'object', properties: { ok: { type: 'boolean' }, level: { enum: ['low', 'high'] } },
      required: ['ok', 'level'], additionalProperties: false,
    };
    const response = await chatAll({
      model, messages: [{ role: 'user', content: chatMessage }], max_tokens: 200, temperature: 1,
      seed: 11, response_format: { type: 'json_schema', json_schema: { name: 'flags', schema, strict: true } },
    });
    const choice = response.choices[0];
    expect(choice.finish_reason === 'stop', `finish_reason ${choice.finish_reason}`);
    const value = JSON.parse(choice.message.content);
    expect(typeof value.ok === 'boolean' && ['low', 'high'].includes(value.level) &&
           Object.keys(value).length === 2, `content ${json(choice.message.content)}`);
    return 'finish_reason stop, the content parses and matches the schema';
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
  await expectError('error n 0', request({ n: 0 }), 400, 'n');
  await expectError('error n 129', request({ n: 129 }), 400, 'n');
  await expectError('error presence_penalty 2.5', request({ presence_penalty: 2.5 }), 400, 'presence_penalty');
  await expectError('error frequency_penalty -3', request({ frequency_penalty: -3 }), 400, 'frequency_penalty');
  await expectError('error logit_bias 101', request({ logit_bias: { 1332: 101 } }), 400, 'logit_bias');
  await expectError('error logit_bias outside the vocabulary',
    request({ logit_bias: { 1000000000: 1 } }), 400, 'logit_bias');
  if (endpoint === 'completions')
    await expectError('error logprobs 6', request({ logprobs: 6 }), 400, 'logprobs');
  else {
    await expectError('error top_logprobs 21', request({ logprobs: true, top_logprobs: 21 }), 400, 'top_logprobs');
    await expectError('error top_logprobs without logprobs', request({ top_logprobs: 2 }), 400, 'top_logprobs');
  }
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
