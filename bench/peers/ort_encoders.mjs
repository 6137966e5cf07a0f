// ONNX Runtime peer (npm onnxruntime-node, its bundled CPU library) for bench/encoders.py: a BERT
// forward and a Marian greedy translation on the graphs hf_encoders.py exported. Prints JSON lines
// (bench/peers/README.md).
//
//   node ort_encoders.mjs --npm DIR --model bert --onnx F.onnx [--batch 8 --seq 128] [--vocab 30522]
//       [--seed 1 | --ids-file F] [--threads 1,2] [--runs 7] [--warmup 1]
//   node ort_encoders.mjs --npm DIR --model marian --encoder E.onnx --decoder D.onnx --source 1,2,...,0
//       [--new-tokens 32] [--heads 8 --head-dim 64 --layers 6] [--eos 0 --start 58100]
//       [--threads 1,2] [--runs 7] [--warmup 1]
//
// One session (two for Marian) per thread count: intraOpNumThreads T, interOpNumThreads 1,
// graphOptimizationLevel 'all', CPU provider (bench/peers/README.md).
// - BERT: times session.run on [batch, seq] ids drawn by hf_encoders.py's LCG (x <- (1103515245 x
//   + 12345) mod 2^31, id = 1 + x mod (vocab - 1), seeded with --seed: the PyTorch peer's ids), or
//   the ids of --ids-file (JSON {"input_ids": [[...], ...]}); attention_mask all ones, token types 0.
//   The line carries the first 4 values of last_hidden_state[0, 0] and pooler_output[0], so that
//   engines can be compared on one input.
// - Marian: the encoder graph runs once on the source (its cross_key_i / cross_value_i are every
//   decoder layer's cross-attention keys/values); the decoder graph then runs one token at a time
//   from --start, with empty past_* tensors first and each step's present_* fed back as past_*;
//   the argmax of the logits (the first maximum) is the next token; generation stops at --eos or
//   after --new-tokens tokens. prefill = encoder + the first decoder step, decode = the rest.
import fs from "fs";
import path from "path";
import {npmRequire, pauseBetweenConfigurations} from "./node_common.mjs";

const USAGE = "usage: ort_encoders.mjs --npm DIR --model bert --onnx F.onnx [--batch 8 --seq 128 --vocab 30522] " +
              "[--ids-file F] | --model marian --encoder E.onnx --decoder D.onnx --source IDS [--new-tokens 32] " +
              "[--heads 8 --head-dim 64 --layers 6 --eos 0 --start 58100]; [--threads 1,2] [--runs 7] [--warmup 1]";

// --key value pairs (node_common's parseArgs wants --model FILE and --prompt).
function parseArgs(argv) {
    const a = {threads: "1,2", runs: 7, warmup: 1, batch: 8, seq: 128, vocab: 30522, seed: 1, newTokens: 32,
               heads: 8, headDim: 64, layers: 6, eos: 0, start: 58100};
    for (let i = 0; i < argv.length; i++) {
        const key = argv[i].replace(/^--/, "").replace(/-([a-z])/g, (_, c) => c.toUpperCase());
        a[key] = argv[++i];
    }
    for (const k of ["runs", "warmup", "batch", "seq", "vocab", "seed", "newTokens", "heads", "headDim", "layers",
                     "eos", "start"])
        a[k] = Number(a[k]);
    a.threads = String(a.threads).split(",").map(Number);
    a.source = a.source ? String(a.source).split(",").filter(x => x !== "").map(Number) : null;
    const ok = a.npm && (a.model === "bert" ? a.onnx : a.model === "marian" && a.encoder && a.decoder && a.source);
    if (!ok || !(a.runs >= 1) || !(a.warmup >= 0)) {
        console.error(USAGE);
        process.exit(2);
    }
    return a;
}

// node_common's statistics are not exported: the same fields here.
function stats(runs) {
    const s = [...runs].sort((x, y) => x - y), n = s.length;
    const median = n % 2 ? s[(n - 1) / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    return {runs_ms: runs.map(x => Math.round(x * 1e4) / 1e4), runs: n, median_ms: median, min_ms: s[0],
            max_ms: s[n - 1]};
}

function argmax(data) {
    let best = 0;
    for (let i = 1; i < data.length; i++) if (data[i] > data[best]) best = i;
    return best;
}

// hf_encoders.py's lcg_ids (BigInt: the product exceeds 2^53).
function lcgIds(count, low, high, seed) {
    const out = [];
    let x = BigInt(seed);
    for (let i = 0; i < count; i++) {
        x = (1103515245n * x + 12345n) % 2147483648n;
        out.push(low + Number(x % BigInt(high - low)));
    }
    return out;
}

const a = parseArgs(process.argv.slice(2));
const ort = npmRequire(a.npm)("onnxruntime-node");
const int64 = (values, dims) => new ort.Tensor("int64", BigInt64Array.from(values.map(BigInt)), dims);
const first4 = t => Array.from(t.data.subarray(0, 4));
const open = (file, T) => ort.InferenceSession.create(file, {
    intraOpNumThreads: T, interOpNumThreads: 1, graphOptimizationLevel: "all", executionProviders: ["cpu"]});

async function bert(T) {
    let rows, from;
    if (a.idsFile) {
        rows = JSON.parse(fs.readFileSync(a.idsFile, "utf8")).input_ids;
        from = a.idsFile;
    } else {
        const flat = lcgIds(a.batch * a.seq, 1, a.vocab, a.seed);
        rows = Array.from({length: a.batch}, (_, b) => flat.slice(b * a.seq, (b + 1) * a.seq));
        from = `lcg seed ${a.seed}`;
    }
    const B = rows.length, S = rows[0].length;
    const feeds = {input_ids: int64(rows.flat(), [B, S]), attention_mask: int64(new Array(B * S).fill(1), [B, S]),
                   token_type_ids: int64(new Array(B * S).fill(0), [B, S])};
    const session = await open(a.onnx, T);
    const runs = [];
    let out = null;
    for (let i = 0; i < a.warmup + a.runs; i++) {
        const t0 = performance.now();
        out = await session.run(feeds);
        if (i >= a.warmup) runs.push(performance.now() - t0);
    }
    await session.release();
    console.log(JSON.stringify({bench: "encoders", impl: "onnxruntime", engine: "onnxruntime-node", model: "bert",
                                onnx: path.basename(a.onnx), threads: T, intra_op_threads: T, inter_op_threads: 1,
                                graph_optimization: "all", batch: B, seq: S, ids: from, ...stats(runs),
                                last_hidden_state_0_0: first4(out.last_hidden_state),
                                pooler_output_0: first4(out.pooler_output)}));
}

async function marian(T) {
    const enc = await open(a.encoder, T), dec = await open(a.decoder, T);
    const L = a.layers, H = a.heads, Dh = a.headDim, S = a.source.length;
    const pastNames = [], crossNames = [];
    for (let i = 0; i < L; i++)
        for (const kv of ["key", "value"]) {
            pastNames.push(`past_${kv}_${i}`);
            crossNames.push(`cross_${kv}_${i}`);
        }
    const presentNames = pastNames.map(n => n.replace("past_", "present_"));
    for (const n of [...pastNames, ...crossNames])
        if (!dec.inputNames.includes(n)) throw new Error(`the decoder graph has no input ${n} (--layers ${L}?)`);

    async function translate() {
        const ids = int64(a.source, [1, S]), mask = int64(new Array(S).fill(1), [1, S]);
        const t0 = performance.now();
        const e = await enc.run({input_ids: ids, attention_mask: mask});
        const feeds = {encoder_attention_mask: mask};
        for (const n of crossNames) feeds[n] = e[n];
        for (const n of pastNames) feeds[n] = new ort.Tensor("float32", new Float32Array(0), [1, H, 0, Dh]);
        const tokens = [];
        let token = a.start, t1 = null;
        for (;;) {
            feeds.input_ids = int64([token], [1, 1]);
            const out = await dec.run(feeds);
            token = argmax(out.logits.data);
            tokens.push(token);
            if (t1 === null) t1 = performance.now();
            if (token === a.eos || tokens.length >= a.newTokens) break;
            pastNames.forEach((n, i) => { feeds[n] = out[presentNames[i]]; });
        }
        return {prefillMs: t1 - t0, decodeMs: performance.now() - t1, tokens};
    }

    const pre = [], decode = [];
    let ids = null;
    for (let i = 0; i < a.warmup + a.runs; i++) {
        const r = await translate();
        if (ids !== null && JSON.stringify(ids) !== JSON.stringify(r.tokens))
            throw new Error("the greedy ids differ between runs");
        ids = r.tokens;
        if (i < a.warmup) continue;
        pre.push(r.prefillMs);
        decode.push(r.decodeMs);
    }
    await enc.release();
    await dec.release();
    const p = stats(pre), d = stats(decode);
    console.log(JSON.stringify({bench: "encoders", impl: "onnxruntime", engine: "onnxruntime-node", model: "marian",
                                encoder: path.basename(a.encoder), decoder: path.basename(a.decoder), threads: T,
                                intra_op_threads: T, inter_op_threads: 1, graph_optimization: "all",
                                source_len: S, new_tokens: a.newTokens, eos: a.eos, start: a.start, source: a.source,
                                ...stats(pre.map((x, i) => x + decode[i])),
                                prefill_median_ms: p.median_ms, decode_median_ms: d.median_ms,
                                prefill_runs_ms: p.runs_ms, decode_runs_ms: d.runs_ms,
                                tokens: ids.length, ids, ms_per_token: d.median_ms / Math.max(1, ids.length - 1)}));
}

for (const T of a.threads) {
    await (a.model === "bert" ? bert(T) : marian(T));
    await pauseBetweenConfigurations();
}
