// ONNX Runtime peer (npm onnxruntime-node, its bundled CPU library): GPT-2 prefill and greedy decode
// on the graph onnx_gpt2.py exported. Prints JSON lines (bench/peers/README.md).
//
//   node ort_bench.mjs --npm DIR --model F.onnx --prompt 1,2,3 [--new-tokens 128] [--threads 1,2]
//       [--heads 12 --head-dim 64] [--runs 7] [--warmup 1] [--check-prompt 4,5,6 --check-new 16]
//
// One session per thread count: intraOpNumThreads T, interOpNumThreads 1, graphOptimizationLevel
// 'all' (bench/peers/README.md). Prefill runs the prompt with empty past tensors (the graph returns the last
// position's logits only); each decode step feeds one token and the previous step's present_*
// tensors as past_*. The argmax of the logits (the first maximum) is the next token.
import path from "path";
import {npmRequire, parseArgs, pauseBetweenConfigurations, timeGeneration} from "./node_common.mjs";

function argmax(data) {
    let best = 0;
    for (let i = 1; i < data.length; i++) if (data[i] > data[best]) best = i;
    return best;
}

const a = parseArgs(process.argv.slice(2), "ort_bench.mjs", "[--heads 12 --head-dim 64]");
const ort = npmRequire(a.npm)("onnxruntime-node");
// Empty past tensors need the cache's shape: --heads and --head-dim (GPT-2 small: 12 of 64).
const H = Number(a.heads || 12), Dh = Number(a.headDim || 64);

async function generate(session, past, present, prompt, newTokens) {
    const feeds = {};
    for (const name of past) feeds[name] = new ort.Tensor("float32", new Float32Array(0), [1, H, 0, Dh]);
    const ids = t => new ort.Tensor("int64", BigInt64Array.from(t.map(BigInt)), [1, t.length]);
    const t0 = performance.now();
    feeds.input_ids = ids(prompt);
    let out = await session.run(feeds);
    const tokens = [argmax(out.logits.data)];
    const t1 = performance.now();
    for (let s = 0; s < newTokens; s++) {
        past.forEach((name, i) => { feeds[name] = out[present[i]]; });
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
    const base = {bench: "model", impl: "onnxruntime", engine: "onnxruntime-node", model: path.basename(a.model),
                  threads: T, intra_op_threads: T, inter_op_threads: 1, graph_optimization: "all",
                  prompt: a.prompt.length, new_tokens: a.newTokens, prefill_logits: "last"};
    await timeGeneration(a, base, "ort_check", (prompt, n) => generate(session, past, present, prompt, n));
    await session.release();
    await pauseBetweenConfigurations();
}
