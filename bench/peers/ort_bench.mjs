// ONNX Runtime peer (npm onnxruntime-node, its bundled CPU library): GPT-2 prefill and greedy decode
// on the graph onnx_gpt2.py exported. Prints JSON lines (bench/peers/README.md).
//
//   node ort_bench.mjs --npm DIR --model F.onnx --prompt 1,2,3 [--new-tokens 128] [--threads 1,2]
//       [--heads 12 --head-dim 64] [--runs 7] [--warmup 1] [--check-prompt 4,5,6 --check-new 16]
//
// One session per thread count: intraOpNumThreads T, interOpNumThreads 1, graphOptimizationLevel
// 'all' (PEERS.md). Prefill runs the prompt with empty past tensors (the graph returns the last
// position's logits only); each decode step feeds one token and the previous step's present_*
// tensors as past_*. The argmax of the logits (the first maximum) is the next token.
import {createRequire} from "module";
import path from "path";

function parseArgs(argv) {
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
        console.error("usage: ort_bench.mjs --npm DIR --model F.onnx --prompt IDS [--new-tokens N] " +
                      "[--threads 1,2] [--runs N] [--warmup N] [--check-prompt IDS --check-new N]");
        process.exit(2);
    }
    return a;
}

function stats(runs) {
    const s = [...runs].sort((x, y) => x - y), n = s.length;
    const median = n % 2 ? s[(n - 1) / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    return {runs_ms: runs.map(x => Math.round(x * 1e4) / 1e4), runs: n, median_ms: median,
            min_ms: s[0], max_ms: s[n - 1]};
}

function argmax(data) {
    let best = 0;
    for (let i = 1; i < data.length; i++) if (data[i] > data[best]) best = i;
    return best;
}

const a = parseArgs(process.argv.slice(2));
const require = createRequire(path.join(path.resolve(a.npm), "package.json"));
const ort = require("onnxruntime-node");

async function generate(session, shapes, prompt, newTokens) {
    const feeds = {};
    for (const name of shapes.past) feeds[name] = new ort.Tensor("float32", new Float32Array(0), [1, shapes.H, 0, shapes.Dh]);
    const ids = t => new ort.Tensor("int64", BigInt64Array.from(t.map(BigInt)), [1, t.length]);
    const t0 = performance.now();
    feeds.input_ids = ids(prompt);
    let out = await session.run(feeds);
    const tokens = [argmax(out.logits.data)];
    const t1 = performance.now();
    for (let s = 0; s < newTokens; s++) {
        shapes.past.forEach((name, i) => { feeds[name] = out[shapes.present[i]]; });
        feeds.input_ids = ids([tokens[tokens.length - 1]]);
        out = await session.run(feeds);
        tokens.push(argmax(out.logits.data));
    }
    const t2 = performance.now();
    return {prefillMs: t1 - t0, decodeMs: t2 - t1, tokens};
}

for (const T of a.threads) {
    const session = await ort.InferenceSession.create(a.model, {
        intraOpNumThreads: T, interOpNumThreads: 1, graphOptimizationLevel: "all",
        executionProviders: ["cpu"]});
    const past = session.inputNames.filter(n => n.startsWith("past_"));
    const present = past.map(n => n.replace("past_", "present_"));
    // Empty past tensors need the cache's shape: --heads and --head-dim (GPT-2 small: 12 of 64).
    const shapes = {past, present, H: Number(a.heads || 12), Dh: Number(a.headDim || 64)};
    const base = {bench: "model", impl: "onnxruntime", engine: "onnxruntime-node", model: path.basename(a.model),
                  threads: T, intra_op_threads: T, inter_op_threads: 1, graph_optimization: "all",
                  prompt: a.prompt.length, new_tokens: a.newTokens};
    if (a.checkPrompt) {
        const r = await generate(session, shapes, a.checkPrompt, a.checkNew - 1);
        console.log(JSON.stringify({bench: "ort_check", model: base.model, threads: T,
                                    prompt: a.checkPrompt.length, ids: r.tokens}));
    }
    const pre = [], dec = [];
    let first = null;
    for (let i = 0; i < a.warmup + a.runs; i++) {
        const r = await generate(session, shapes, a.prompt, a.newTokens);
        if (i < a.warmup) continue;
        pre.push(r.prefillMs);
        dec.push(r.decodeMs);
        first = r.tokens.slice(0, 8);
    }
    const p = stats(pre), d = stats(dec);
    console.log(JSON.stringify({...base, phase: "prefill", tokens: a.prompt.length, prefill_logits: "last", ...p,
                                tokens_per_s: a.prompt.length / (p.median_ms * 1e-3)}));
    console.log(JSON.stringify({...base, phase: "decode", first_tokens: first, ...d,
                                tokens_per_s: a.newTokens / (d.median_ms * 1e-3),
                                ms_per_token: d.median_ms / a.newTokens}));
    await session.release();
    await new Promise(resolve => setTimeout(resolve, 300));
}
