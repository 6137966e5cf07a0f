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
import path from "path";
import {pathToFileURL} from "url";
import {npmRequire, parseArgs, pauseBetweenConfigurations, timeGeneration} from "./node_common.mjs";

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

const a = parseArgs(process.argv.slice(2), "llama_bench.mjs");
const {getLlama} = await import(pathToFileURL(npmRequire(a.npm).resolve("node-llama-cpp")).href);
// maxThreads 0: each context's thread count is used as given, not capped by a global pool.
const llama = await getLlama({gpu: false, build: "never", maxThreads: 0, logLevel: "error"});
const model = await llama.loadModel({modelPath: a.model, gpuLayers: 0});
const contextSize = Math.max(256, a.prompt.length + a.newTokens + 8,
                             a.checkPrompt ? a.checkPrompt.length + a.checkNew + 8 : 0);

for (const T of a.threads) {
    const context = await model.createContext({contextSize, batchSize: contextSize, threads: {ideal: T, min: T},
                                               sequences: 1});
    const sequence = context.getSequence();
    const base = {bench: "model", impl: "llama_cpp", engine: "node-llama-cpp", model: path.basename(a.model),
                  build: llama.buildType, system_info: llama.systemInfo, threads: T,
                  context_threads: context.currentThreads, flash_attention: context.flashAttention,
                  prompt: a.prompt.length, new_tokens: a.newTokens};
    await timeGeneration(a, base, "llama_check", (prompt, n) => generate(sequence, prompt, n));
    await context.dispose();
    await pauseBetweenConfigurations();
}
await model.dispose();
await llama.dispose();
