// llama.cpp peer (npm node-llama-cpp 3.22, its prebuilt CPU binaries): GPT-2 prefill and greedy
// decode on a GGUF that gguf_gpt2.py wrote. Prints JSON lines (bench/peers/README.md).
//
//   node llama_bench.mjs --npm DIR --model F.gguf --prompt 1,2,3 [--new-tokens 128]
//       [--threads 1,2] [--runs 7] [--warmup 1] [--check-prompt 4,5,6 --check-new 16]
//
// DIR is the npm prefix node-llama-cpp was installed into (its node_modules/ is there).
// A run: the sequence's history (KV cache) is cleared, the prompt is evaluated in one batch and the
// first token sampled greedily (prefill: logits of the last position only, llama.cpp's default),
// then --new-tokens single-token steps each sample the next token (decode).
import {createRequire} from "module";
import path from "path";
import {pathToFileURL} from "url";

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
        console.error("usage: llama_bench.mjs --npm DIR --model F.gguf --prompt IDS [--new-tokens N] " +
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

// Greedy generation: returns {prefillMs, decodeMs, tokens} with tokens = 1 + newTokens ids.
async function generate(sequence, prompt, newTokens) {
    await sequence.clearHistory();
    const tokens = [];
    const t0 = performance.now();
    let t1 = t0;
    for await (const token of sequence.evaluate(prompt, {temperature: 0})) {
        if (tokens.length === 0) t1 = performance.now();
        tokens.push(token);
        if (tokens.length > newTokens) break;
    }
    const t2 = performance.now();
    return {prefillMs: t1 - t0, decodeMs: t2 - t1, tokens};
}

const a = parseArgs(process.argv.slice(2));
const require = createRequire(path.join(path.resolve(a.npm), "package.json"));
const {getLlama} = await import(pathToFileURL(require.resolve("node-llama-cpp")).href);
const llama = await getLlama({gpu: false, build: "never", maxThreads: 0, logLevel: "error"});
const model = await llama.loadModel({modelPath: a.model, gpuLayers: 0});
const base = {bench: "model", impl: "llama_cpp", engine: "node-llama-cpp", model: path.basename(a.model),
              build: llama.buildType, system_info: llama.systemInfo, prompt: a.prompt.length,
              new_tokens: a.newTokens};
const contextSize = Math.max(256, a.prompt.length + a.newTokens + 8,
                             a.checkPrompt ? a.checkPrompt.length + a.checkNew + 8 : 0);

for (const T of a.threads) {
    const context = await model.createContext({contextSize, batchSize: contextSize, threads: {ideal: T, min: T},
                                               sequences: 1});
    const sequence = context.getSequence();
    if (a.checkPrompt) {
        const r = await generate(sequence, a.checkPrompt, a.checkNew - 1);
        console.log(JSON.stringify({bench: "llama_check", model: base.model, threads: T,
                                    prompt: a.checkPrompt.length, ids: r.tokens}));
    }
    const pre = [], dec = [];
    let first = null;
    for (let i = 0; i < a.warmup + a.runs; i++) {
        const r = await generate(sequence, a.prompt, a.newTokens);
        if (r.tokens.length !== a.newTokens + 1)
            throw new Error(`generation stopped after ${r.tokens.length} tokens`);
        if (i < a.warmup) continue;
        pre.push(r.prefillMs);
        dec.push(r.decodeMs);
        first = r.tokens.slice(0, 8);
    }
    const common = {...base, threads: T, context_threads: context.currentThreads,
                    flash_attention: context.flashAttention};
    const p = stats(pre), d = stats(dec);
    console.log(JSON.stringify({...common, phase: "prefill", tokens: a.prompt.length, ...p,
                                tokens_per_s: a.prompt.length / (p.median_ms * 1e-3)}));
    console.log(JSON.stringify({...common, phase: "decode", first_tokens: first, ...d,
                                tokens_per_s: a.newTokens / (d.median_ms * 1e-3),
                                ms_per_token: d.median_ms / a.newTokens}));
    await context.dispose();
    await new Promise(resolve => setTimeout(resolve, 300));
}
await model.dispose();
await llama.dispose();
