// node llama-cpp-generate.mjs NPM_DIR MODEL.gguf PROMPT_IDS N [KV_TYPE [CONTEXT]]
//
// llama.cpp's greedy generation on a GGUF file, through the npm package
// node-llama-cpp (its prebuilt CPU library: gpu false, one thread): the
// prompt's ids (comma-separated) are evaluated in one batch, then N tokens
// are chosen, each the argmax of the raw logits llama.cpp gives (the lowest
// id on a tie, as tfmc's greedy search) and fed back one at a time, as
// tfmc's `generate` does with its KV cache. The K/V cache holds KV_TYPE
// (default F32; llama.cpp's own default is F16, which rounds every key and
// value; node-llama-cpp's experimentalKvCacheKeyType/ValueType), flash
// attention off. The context holds CONTEXT tokens (default 64; llama.cpp
// rounds it up to a multiple of 256, and picks a phi3 file's long rope
// factors when that passes the file's original context). Prints one JSON
// object: {"ids": [N ids], "logits": [N rows of the vocabulary's logits, by
// id], "kv": the cache's ggml type}.
import {createRequire} from "module";
import path from "path";
import {pathToFileURL} from "url";

const [npmDir, modelPath, promptText, nText, kvType = "F32", contextText = "64"] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(npmDir), "package.json"));
const {getLlama} = await import(pathToFileURL(require.resolve("node-llama-cpp")).href);
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath, gpuLayers: 0});
const prompt = promptText.split(",").map(Number);
const steps = Number(nText);
const context = await model.createContext({
    contextSize: Number(contextText), batchSize: 64, threads: 1, sequences: 1, flashAttention: false,
    experimentalKvCacheKeyType: kvType, experimentalKvCacheValueType: kvType});
const sequence = context.getSequence();
const nVocab = model.fileInsights.vocabularySize ?? model.tokens.length;

function row(result) {
    const logits = new Array(nVocab).fill(null);
    for (const [id, value] of result.next.logits)
        logits[id] = value;
    if (logits.some(v => v === null))
        throw new Error(`llama.cpp gave ${result.next.logits.size} logits, the vocabulary has ${nVocab}`);
    return logits;
}

const ids = [];
const rows = [];
let input = prompt.map((id, i) => i + 1 < prompt.length ? id : [id, {generateNext: {logits: true}}]);
for (let step = 0; step < steps; ++step) {
    const results = await sequence.controlledEvaluate(input);
    const logits = row(results[results.length - 1]);
    let best = 0;
    for (let id = 1; id < logits.length; ++id)
        if (logits[id] > logits[best])
            best = id;
    ids.push(best);
    rows.push(logits);
    input = [[best, {generateNext: {logits: true}}]];
}
process.stdout.write(JSON.stringify({ids, logits: rows, kv: String(context.kvCacheKeyType)}) + "\n");
await context.dispose();
await model.dispose();
await llama.dispose();
