// node load_test.mjs --openai DIR --base-url http://127.0.0.1:PORT/v1
//     --model ID --out FILE [--clients 32] [--requests 500] [--seed S]
//     [--max-prompt 8] [--max-tokens 8] [--vocab 50257] [--api-key KEY]
//     [--allow-429] [--retries-429 20] [--timeout 600]
//
// A bounded load test of `NAME serve` on loopback through OpenAI's official
// JavaScript client: --clients workers send --requests completions between
// them, as fast as the server answers. The requests come from a PRNG of
// --seed before any is sent (the same seed, the same requests, whatever the
// order they run in): a prompt of 1..--max-prompt ids below --vocab,
// max_tokens 1..--max-tokens, half greedy (temperature 0) and half sampled
// (temperature 0.8, top_p 0.9, a seed of its own); about 10% are streamed
// and cancelled after their first chunk (the AbortController of the
// request), 30% streamed to the end (with usage), the rest plain.
//
// Each answer is checked for what the API says (one choice, token_ids of
// ints below --vocab, at most max_tokens of them, finish_reason "length"
// exactly when all were generated, usage against the prompt and token_ids,
// a stream's chunks against each other and its raw body ending with
// `data: [DONE]`); what the server generated is checked afterwards against
// the solo CLI by check_load.py. --out gets one JSON line per finished or
// cancelled request:
//   {"index", "kind": plain|stream|cancel, "prompt", "max_tokens",
//    "temperature", "top_p"?, "seed"?, "token_ids", "finish_reason",
//    "cancelled"}
// (a cancelled request's token_ids are those received before the abort, a
// prefix of what it would have generated; finish_reason null), then
// {"summary": {...}} with the errors counted by kind. A 429 (queue full) is
// an error unless --allow-429: then the request waits its Retry-After (at
// most 1 s) and is sent again, up to --retries-429 times. Last, one greedy
// request must still be answered after the load, and the server's
// /metrics must show no request running or queued within 5 s (the rows
// of the cancelled streams have left); all within --timeout seconds.
// Prints stable lines for FileCheck (the mix of requests, the outcome;
// timings go to stderr) and exits 1 on any unexpected error or invalid
// answer.
import fs from 'fs';
import {
  parseArgs, die, integer, importOpenAI, capturingFetch, sseData, prng,
} from './openai_lib.mjs';

const usage = `usage: node load_test.mjs --openai DIR --base-url URL --model ID --out FILE
  [--clients N] [--requests N] [--seed S] [--max-prompt N] [--max-tokens N]
  [--vocab N] [--api-key KEY] [--allow-429] [--retries-429 N] [--timeout S]`;
const args = parseArgs(process.argv.slice(2),
  ['--openai', '--base-url', '--model', '--out', '--clients', '--requests', '--seed',
    '--max-prompt', '--max-tokens', '--vocab', '--api-key', '--retries-429', '--timeout'],
  ['--allow-429'], usage);
for (const required of ['base-url', 'model', 'out'])
  if (!args[required])
    die(`--${required} is required\n${usage}`, 2);
const model = args.model;
const clients = integer(args, 'clients', 32);
const total = integer(args, 'requests', 500);
const seed = integer(args, 'seed', 1);
const maxPrompt = integer(args, 'max-prompt', 8);
const maxTokens = integer(args, 'max-tokens', 8);
const vocab = integer(args, 'vocab', 50257);
const retries429 = integer(args, 'retries-429', 20);
const timeout = integer(args, 'timeout', 600);
if (clients < 1 || total < 1 || maxPrompt < 1 || maxTokens < 1 || vocab < 1)
  die('--clients, --requests, --max-prompt, --max-tokens and --vocab must be at least 1', 2);

const { module: openai } = await importOpenAI(args.openai);
const OpenAI = openai.OpenAI || openai.default;
const { APIError } = openai;

// The requests, all drawn before any is sent.
const random = prng(seed);
const below = n => Math.floor(random() * n);
const requests = [];
for (let index = 0; index < total; ++index) {
  const prompt = Array.from({ length: 1 + below(maxPrompt) }, () => below(vocab));
  const params = { model, prompt, max_tokens: 1 + below(maxTokens) };
  if (random() < 0.5) {
    params.temperature = 0;
  } else {
    params.temperature = 0.8;
    params.top_p = 0.9;
    params.seed = below(2 ** 31);
  }
  const draw = random();
  const kind = draw < 0.1 ? 'cancel' : draw < 0.4 ? 'stream' : 'plain';
  requests.push({ index, kind, params });
}

const json = JSON.stringify;
class Invalid extends Error {}
function expect(condition, message) {
  if (!condition)
    throw new Invalid(message);
}
const isIds = v => Array.isArray(v) && v.every(x => Number.isInteger(x) && x >= 0 && x < vocab);

function checkAnswer(params, ids, finish, usage) {
  expect(isIds(ids), `token_ids ${json(ids)} are not ids below ${vocab}`);
  expect(ids.length >= 1 && ids.length <= params.max_tokens,
    `${ids.length} token_ids for max_tokens ${params.max_tokens}`);
  // No eos in these programs' vocabularies (no tokenizer): every request
  // runs to max_tokens.
  expect(finish === (ids.length === params.max_tokens ? 'length' : 'stop'),
    `finish_reason ${json(finish)} after ${ids.length} of ${params.max_tokens} tokens`);
  expect(usage && usage.prompt_tokens === params.prompt.length &&
    usage.completion_tokens === ids.length &&
    usage.total_tokens === params.prompt.length + ids.length,
    `usage ${json(usage)} for ${params.prompt.length} prompt ids and ${ids.length} token_ids`);
}

async function plain(client, params) {
  const response = await client.completions.create(params);
  expect(response.object === 'text_completion' && response.model === model,
    `object ${json(response.object)}, model ${json(response.model)}`);
  expect(response.choices.length === 1 && response.choices[0].index === 0,
    `${response.choices.length} choices`);
  const choice = response.choices[0];
  checkAnswer(params, choice.token_ids, choice.finish_reason, response.usage);
  return { token_ids: choice.token_ids, finish_reason: choice.finish_reason, cancelled: false };
}

async function streamed(client, captures, params, cancel) {
  const before = captures.length;
  const controller = new AbortController();
  const stream = await client.completions.create(
    { ...params, stream: true, stream_options: { include_usage: true } },
    { signal: controller.signal });
  let ids = [], finish = null, usage = null, chunks = 0, aborted = false;
  // The chunks one by one, not with for await: leaving that loop early
  // returns the iterator, and node 20's fetch can leave that waiting
  // forever on a body aborted after it all arrived. An abandoned iterator
  // and the abandoned copy of its body wait on nothing.
  const chunkIterator = stream[Symbol.asyncIterator]();
  for (;;) {
    const { value: chunk, done } = await chunkIterator.next();
    if (done)
      break;
    ++chunks;
    expect(usage === null, 'a chunk after the usage chunk');
    if (chunk.usage) {
      expect(chunk.choices.length === 0, 'the usage chunk has choices');
      usage = chunk.usage;
      continue;
    }
    expect(chunk.choices.length === 1 && chunk.choices[0].index === 0,
      `chunk choices ${json(chunk.choices)}`);
    expect(finish === null, 'a chunk after finish_reason');
    const choice = chunk.choices[0];
    expect(isIds(choice.token_ids), `chunk token_ids ${json(choice.token_ids)}`);
    ids = ids.concat(choice.token_ids);
    if (choice.finish_reason)
      finish = choice.finish_reason;
    if (cancel && finish === null && ids.length > 0) {
      aborted = true;
      controller.abort();
      break;
    }
  }
  if (aborted)
    return { token_ids: ids, finish_reason: null, cancelled: true };
  expect(captures.length === before + 1,
    `${captures.length - before} text/event-stream responses for one streamed request`);
  const captured = await captures[before];
  // Not cancelled (asked to, but the first chunk was the last): complete.
  expect(!captured.error, `the stream failed: ${captured.error && captured.error.message}`);
  const events = sseData(captured.text);
  expect(events.length === chunks + 1 && events[events.length - 1] === '[DONE]',
    `${events.length} events for ${chunks} chunks, the last ${json(events[events.length - 1])}`);
  checkAnswer(params, ids, finish, usage);
  return { token_ids: ids, finish_reason: finish, cancelled: false };
}

const errors = {};
let count429 = 0;
const results = [];
const latencies = [];
function countError(kind, request, error) {
  errors[kind] = (errors[kind] || 0) + 1;
  if (errors[kind] <= 3)
    process.stderr.write(`request ${request.index} (${request.kind}, ${json(request.params)}): ${kind}: ${error.message}\n`);
}
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

let next = 0;
async function worker() {
  const captures = [];
  const client = new OpenAI({
    apiKey: args['api-key'] ?? 'no-key', baseURL: args['base-url'], maxRetries: 0,
    timeout: 300000, fetch: capturingFetch(captures),
  });
  while (next < requests.length) {
    const request = requests[next++];
    inflight.add(request.index);
    for (let attempt = 0; ; ++attempt) {
      const start = performance.now();
      try {
        const result = request.kind === 'plain' ? await plain(client, request.params)
          : await streamed(client, captures, request.params, request.kind === 'cancel');
        latencies.push(performance.now() - start);
        results.push({
          index: request.index, kind: request.kind, ...request.params, model: undefined, ...result,
        });
      } catch (error) {
        if (error instanceof APIError && error.status === 429 && args['allow-429']) {
          ++count429;
          if (attempt < retries429) {
            const after = Number(error.headers && error.headers.get('retry-after')) || 1;
            await sleep(Math.min(after, 1) * 1000 * (0.5 + Math.random() / 2));
            continue;
          }
          countError('http_429_gave_up', request, error);
        } else if (error instanceof Invalid) {
          countError('invalid_answer', request, error);
        } else if (error instanceof APIError && error.status) {
          countError(`http_${error.status}`, request, error);
        } else {
          countError(error.constructor.name, request, error);
        }
      }
      break;
    }
    inflight.delete(request.index);
  }
}

const kinds = { plain: 0, stream: 0, cancel: 0 };
let sampled = 0;
for (const r of requests) {
  ++kinds[r.kind];
  sampled += r.params.temperature > 0;
}
process.stdout.write(`requests: ${total} from seed ${seed} (${kinds.plain} plain, ${kinds.stream} streamed, ` +
  `${kinds.cancel} to cancel; ${total - sampled} greedy, ${sampled} sampled) by ${clients} clients\n`);

// A request the server never finishes must fail the test, not hang it:
// after --timeout seconds, or when nothing is left to wait on (node exits
// with a top-level await pending), the requests still out are named.
const inflight = new Set();
let finished = false;
function reportInflight(why) {
  const list = [...inflight].sort((a, b) => a - b);
  process.stdout.write(`load test did not finish (${why}): ${list.length} requests still out: ` +
    `${list.slice(0, 10).map(i => json({ index: i, kind: requests[i].kind, ...requests[i].params })).join(' ')}\n`);
}
process.on('exit', () => {
  if (!finished) {
    reportInflight('nothing left to wait on');
    process.exitCode = 1;
  }
});
setTimeout(() => {
  reportInflight(`${timeout} s passed`);
  finished = true;
  process.exit(1);
}, timeout * 1000).unref();

const started = performance.now();
await Promise.all(Array.from({ length: Math.min(clients, total) }, worker));
const seconds = (performance.now() - started) / 1000;

// After the load, the server still answers.
let after = 'no';
try {
  const client = new OpenAI({ apiKey: args['api-key'] ?? 'no-key', baseURL: args['base-url'], maxRetries: 0, timeout: 60000 });
  const params = { model, prompt: [1], max_tokens: maxTokens, temperature: 0 };
  const response = await client.completions.create(params);
  checkAnswer(params, response.choices[0].token_ids, response.choices[0].finish_reason, response.usage);
  after = 'yes';
} catch (error) {
  countError('after_load', { index: -1, kind: 'plain', params: {} }, error);
}

// Nothing left running: the rows of the cancelled streams have left the
// batch (the server's /metrics gauges, given a few seconds).
const gauge = (text, name) => {
  const match = text.match(new RegExp(`^${name} ([0-9.]+)$`, 'm'));
  return match ? Number(match[1]) : null;
};
let idle = 'no';
try {
  for (let attempt = 0; attempt < 50; ++attempt) {
    const text = await (await fetch(`${args['base-url'].replace(/\/v1\/?$/, '')}/metrics`)).text();
    const running = gauge(text, 'tfmc_running_sequences'), queued = gauge(text, 'tfmc_queue_depth');
    if (running === null || queued === null)
      throw new Error('/metrics has no tfmc_running_sequences or tfmc_queue_depth');
    if (running === 0 && queued === 0) {
      idle = 'yes';
      break;
    }
    idle = `no (${running} running, ${queued} queued after 5 s)`;
    await sleep(100);
  }
  if (idle !== 'yes')
    throw new Error(idle);
} catch (error) {
  countError('not_idle', { index: -1, kind: '-', params: {} }, error);
}

results.sort((a, b) => a.index - b.index);
const cancelled = results.filter(r => r.cancelled).length;
const errorCount = Object.values(errors).reduce((a, b) => a + b, 0);
const summary = {
  requests: total, finished: results.length - cancelled, cancelled, errors,
  retried_429: count429, seconds: Number(seconds.toFixed(3)),
};
fs.writeFileSync(args.out, results.map(r => json(r)).join('\n') + (results.length ? '\n' : '') +
  json({ summary }) + '\n');

latencies.sort((a, b) => a - b);
const quantile = q => latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))].toFixed(1) : '-';
process.stderr.write(`${results.length} answers in ${seconds.toFixed(2)} s ` +
  `(${(results.length / seconds).toFixed(1)}/s); latency p50 ${quantile(0.5)} ms, ` +
  `p99 ${quantile(0.99)} ms; 429s retried: ${count429}\n`);
process.stdout.write(`answered: ${results.length - cancelled} to the end, ${cancelled} cancelled ` +
  `(${results.filter(r => r.kind === 'cancel' && !r.cancelled).length} to cancel ended with their first chunk)\n`);
process.stdout.write(`errors: ${errorCount}${errorCount ? ' ' + json(errors) : ''}\n`);
if (args['allow-429'])
  process.stdout.write(`429s retried: ${count429}\n`);
process.stdout.write(`answered after the load: ${after}\n`);
process.stdout.write(`idle after the load: ${idle}\n`);
finished = true;
process.exit(errorCount ? 1 : 0);
