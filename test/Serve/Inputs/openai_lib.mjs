// What openai_client.mjs and load_test.mjs share: their command lines, the
// official `openai` package (imported from the directory --openai names,
// build/npm/node_modules/openai: lit's %openai_npm), and a fetch that keeps
// a copy of each streamed body, so that a test can see what the client's
// own SSE parser hides (it ends quietly when a stream stops without
// `data: [DONE]`).
import fs from 'fs';
import path from 'path';
import { pathToFileURL } from 'url';

/// The command line as {flag: value}; `booleans` take no value. Unknown
/// flags and missing values are usage errors (exit 2).
export function parseArgs(argv, valued, booleans, usage) {
  const out = {};
  for (let i = 0; i < argv.length; ++i) {
    const arg = argv[i];
    const eq = arg.indexOf('=');
    const flag = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    if (booleans.includes(flag) && eq < 0) {
      out[flag.slice(2)] = true;
    } else if (valued.includes(flag)) {
      let value;
      if (eq > 0 && arg.startsWith('--'))
        value = arg.slice(eq + 1);
      else if (i + 1 < argv.length)
        value = argv[++i];
      else
        die(`${flag} needs a value\n${usage}`, 2);
      out[flag.slice(2)] = value;
    } else {
      die(`unknown argument ${JSON.stringify(arg)}\n${usage}`, 2);
    }
  }
  return out;
}

export function die(message, code = 1) {
  process.stderr.write(message.endsWith('\n') ? message : message + '\n');
  process.exit(code);
}

export function integer(args, name, fallback) {
  if (args[name] === undefined) {
    if (fallback === undefined)
      die(`--${name} is required`, 2);
    return fallback;
  }
  if (!/^-?[0-9]+$/.test(args[name]))
    die(`--${name} expects an integer, got ${JSON.stringify(args[name])}`, 2);
  return Number(args[name]);
}

export function idList(text, flag) {
  if (!/^[0-9]+(,[0-9]+)*$/.test(text))
    die(`${flag} expects ids like 1,2,3, got ${JSON.stringify(text)}`, 2);
  return text.split(',').map(Number);
}

/// The package's ESM entry point (its exports' "import"/"default" of ".",
/// else "module", else "main").
export async function importOpenAI(dir) {
  if (!dir)
    die('--openai DIR is required (the openai npm package: build/npm/node_modules/openai)', 2);
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf-8'));
  let entry = pkg.module || pkg.main || 'index.js';
  const dot = pkg.exports && pkg.exports['.'];
  if (typeof dot === 'string')
    entry = dot;
  else if (dot && (dot.import || dot.default))
    entry = typeof (dot.import || dot.default) === 'string' ? (dot.import || dot.default)
      : (dot.import || dot.default).default;
  const module = await import(pathToFileURL(path.join(dir, entry)).href);
  return { module, version: pkg.version };
}

/// A fetch for the client: each response whose content-type is
/// text/event-stream is teed, and `captures` gets a promise of the whole
/// body as text (or of the error that ended it: an abort).
export function capturingFetch(captures) {
  return async (url, init) => {
    const response = await fetch(url, init);
    const type = response.headers.get('content-type') || '';
    if (!response.body || !type.startsWith('text/event-stream'))
      return response;
    const [forClient, forUs] = response.body.tee();
    captures.push(new Response(forUs).text().then(
      text => ({ text }), error => ({ error })));
    return new Response(forClient, {
      status: response.status, statusText: response.statusText, headers: response.headers,
    });
  };
}

/// The events of an SSE body: each `data:` payload, in order.
export function sseData(text) {
  const events = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    const data = block.split(/\r?\n/).filter(l => l.startsWith('data:'))
      .map(l => l.slice(5).replace(/^ /, ''));
    if (data.length)
      events.push(data.join('\n'));
  }
  return events;
}

/// A PRNG (mulberry32) for load_test.mjs: the same seed, the same requests.
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
