// What ort_bench.mjs and llama_bench.mjs share: their command line, the npm prefix the engines
// were installed into, and the timing loop with its JSON lines (bench/peers/README.md).
import {createRequire} from "module";
import path from "path";

const USAGE = "--npm DIR --model FILE --prompt IDS [--new-tokens N] [--threads 1,2] [--runs N] " +
              "[--warmup N] [--check-prompt IDS --check-new N]";

// --key value pairs; ids are comma-separated token ids.
export function parseArgs(argv, script, extra = "") {
    const a = {newTokens: 128, threads: "1,2", runs: 7, warmup: 1, checkNew: 16};
    for (let i = 0; i < argv.length; i++) {
        const key = argv[i].replace(/^--/, "").replace(/-([a-z])/g, (_, c) => c.toUpperCase());
        a[key] = argv[++i];
    }
    for (const k of ["newTokens", "runs", "warmup", "checkNew"]) a[k] = Number(a[k]);
    const ids = s => (s ? String(s).split(",").filter(x => x !== "").map(Number) : null);
    a.prompt = ids(a.prompt);
    a.checkPrompt = ids(a.checkPrompt);
    a.threads = String(a.threads).split(",").map(Number);
    if (!a.npm || !a.model || !a.prompt) {
        console.error(`usage: ${script} ${USAGE} ${extra}`.trim());
        process.exit(2);
    }
    return a;
}

// `require` resolving packages in the npm prefix DIR (DIR/node_modules).
export function npmRequire(dir) {
    return createRequire(path.join(path.resolve(dir), "package.json"));
}

function stats(runs) {
    const s = [...runs].sort((x, y) => x - y), n = s.length;
    const median = n % 2 ? s[(n - 1) / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    return {runs_ms: runs.map(x => Math.round(x * 1e4) / 1e4), runs: n, median_ms: median,
            min_ms: s[0], max_ms: s[n - 1]};
}

// At one thread count: the check prompt's greedy ids (a `checkKey` line), then warm-up and timed
// generations of the prompt. generate(prompt, newTokens) resolves to {prefillMs, decodeMs,
// tokens} with tokens = the prefill's token and newTokens more.
export async function timeGeneration(a, base, checkKey, generate) {
    if (a.checkPrompt) {
        const r = await generate(a.checkPrompt, a.checkNew - 1);
        console.log(JSON.stringify({bench: checkKey, model: base.model, threads: base.threads,
                                    prompt: a.checkPrompt.length, ids: r.tokens}));
    }
    const pre = [], dec = [];
    let first = null;
    for (let i = 0; i < a.warmup + a.runs; i++) {
        const r = await generate(a.prompt, a.newTokens);
        if (r.tokens.length !== a.newTokens + 1)
            throw new Error(`generation stopped after ${r.tokens.length} tokens`);
        if (i < a.warmup) continue;
        pre.push(r.prefillMs);
        dec.push(r.decodeMs);
        first = r.tokens.slice(0, 8);
    }
    const p = stats(pre), d = stats(dec);
    console.log(JSON.stringify({...base, phase: "prefill", tokens: a.prompt.length, ...p,
                                tokens_per_s: a.prompt.length / (p.median_ms * 1e-3)}));
    console.log(JSON.stringify({...base, phase: "decode", first_tokens: first, ...d,
                                tokens_per_s: a.newTokens / (d.median_ms * 1e-3),
                                ms_per_token: d.median_ms / a.newTokens}));
}

export const pauseBetweenConfigurations = () => new Promise(resolve => setTimeout(resolve, 300));
