// node transformers_js_generate.mjs TRANSFORMERS_DIR MODELS_DIR
//
// Hugging Face's generation code as transformers.js (npm
// @huggingface/transformers, ONNX Runtime for node) runs it, on the ONNX model
// directories transformers_js_export.py wrote into MODELS_DIR: each
// MODELS_DIR/MODEL is loaded from the local path only (env.allowRemoteModels
// false, env.localModelPath MODELS_DIR, dtype fp32: onnx/model.onnx, or
// encoder_model.onnx + decoder_model_merged.onnx), then
//
//   forward: model(inputs) on the fixture's inputs.safetensors (a batch of 2,
//     right-padded), the logits' largest |difference| from
//     expected.safetensors at the unpadded positions, over max(1, max
//     |expected|);
//   cases: model.generate for each run of MODELS_DIR/cases.json:
//     decoder-only input_ids = the prompt; Marian input_ids = the source and
//     decoder_start_token_id = the run's bos; do_sample false, num_beams,
//     max_new_tokens; eos_token_id the run's eos or null (no end token: the
//     config's eos must not stop a run early); bad_words_ids the run's or
//     null; forced_eos_token_id null (Marian's config forces eos at
//     max_length; tfmc has no such option); the new ids only. A run with
//     num_beams > 1 is also generated with num_beams 1 ("greedy"), which
//     shows whether num_beams changed anything.
//
// Prints one JSON object: {MODEL: {forward: {...}, cases: {NAME: {ids,
// greedy?}}}, "transformers_js": VERSION}.
import fs from 'fs';
import path from 'path';
import { pathToFileURL } from 'url';

const [packageDir, modelsDir] = process.argv.slice(2);
if (!packageDir || !modelsDir) {
  console.error('usage: node transformers_js_generate.mjs TRANSFORMERS_DIR MODELS_DIR');
  process.exit(2);
}
const t = await import(pathToFileURL(path.join(packageDir, 'dist', 'transformers.node.mjs')).href);
const version = JSON.parse(fs.readFileSync(path.join(packageDir, 'package.json'), 'utf-8')).version;
t.env.allowRemoteModels = false;
t.env.allowLocalModels = true;
t.env.localModelPath = path.resolve(modelsDir) + path.sep;

// safetensors: an 8-byte little-endian header length, a JSON header, the data.
function readSafetensors(file) {
  const data = fs.readFileSync(file);
  const n = Number(data.readBigUInt64LE(0));
  const header = JSON.parse(data.subarray(8, 8 + n).toString('utf-8'));
  const out = {};
  for (const [name, info] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const [begin, end] = info.data_offsets;
    const bytes = new Uint8Array(data.subarray(8 + n + begin, 8 + n + end)); // a copy: aligned
    const kinds = { F32: Float32Array, I64: BigInt64Array };
    if (!(info.dtype in kinds)) throw new Error(`${file}: ${name}: dtype ${info.dtype} not handled`);
    out[name] = { dims: info.shape, data: new kinds[info.dtype](bytes.buffer) };
  }
  return out;
}

const i64 = (rows) => new t.Tensor('int64', BigInt64Array.from(rows.flat().map(BigInt)), [rows.length, rows[0].length]);
const ones = (length) => i64([Array(length).fill(1)]);

async function forwardCheck(model, fixture, encoderDecoder) {
  const inputs = readSafetensors(path.join(fixture, 'inputs.safetensors'));
  const expected = readSafetensors(path.join(fixture, 'expected.safetensors')).logits;
  const tensor = (x) => new t.Tensor('int64', x.data, x.dims);
  const feed = { input_ids: tensor(inputs.input_ids), attention_mask: tensor(inputs.attention_mask) };
  if (encoderDecoder) feed.decoder_input_ids = tensor(inputs.decoder_input_ids);
  const keep = encoderDecoder ? inputs.decoder_attention_mask : inputs.attention_mask;
  const { logits } = await model(feed);
  const got = logits.data;
  const vocab = expected.dims.at(-1);
  if (logits.dims.join() !== expected.dims.join()) throw new Error(`logits ${logits.dims} vs expected ${expected.dims}`);
  let scale = 1, diff = 0, positions = 0;
  for (let p = 0; p < keep.data.length; ++p) {
    if (keep.data[p] === 0n) continue;
    ++positions;
    for (let v = 0; v < vocab; ++v) scale = Math.max(scale, Math.abs(expected.data[p * vocab + v]));
  }
  for (let p = 0; p < keep.data.length; ++p) {
    if (keep.data[p] === 0n) continue;
    for (let v = 0; v < vocab; ++v) diff = Math.max(diff, Math.abs(got[p * vocab + v] - expected.data[p * vocab + v]));
  }
  return { max_abs_diff_over_scale: diff / scale, scale, positions };
}

async function generate(model, c, encoderDecoder, numBeams) {
  const prompt = encoderDecoder ? c.source : c.prompt;
  const options = {
    input_ids: i64([prompt]),
    attention_mask: ones(prompt.length),
    max_new_tokens: c.max_new_tokens,
    do_sample: false,
    num_beams: numBeams,
    num_return_sequences: 1,
    eos_token_id: c.eos ?? null,
    bad_words_ids: c.bad_words.length ? c.bad_words : null,
    forced_eos_token_id: null,
    forced_bos_token_id: null,
    min_length: 0,
    min_new_tokens: null,
    repetition_penalty: 1.0,
    no_repeat_ngram_size: 0,
    length_penalty: 1.0,
    early_stopping: false,
  };
  if (encoderDecoder) options.decoder_start_token_id = c.bos;
  const sequences = await model.generate(options);
  const row = sequences.tolist()[0].map(Number);
  // The prompt (decoder-only) or the decoder start (Marian) comes first.
  return row.slice(encoderDecoder ? 1 : prompt.length);
}

const all = JSON.parse(fs.readFileSync(path.join(modelsDir, 'cases.json'), 'utf-8'));
const result = { transformers_js: version };
for (const [name, spec] of Object.entries(all)) {
  const Auto = spec.encoder_decoder ? t.AutoModelForSeq2SeqLM : t.AutoModelForCausalLM;
  const model = await Auto.from_pretrained(name, {
    local_files_only: true,
    dtype: 'fp32',
    device: 'cpu',
    session_options: { intraOpNumThreads: 1, interOpNumThreads: 1 },
  });
  const entry = { class: model.constructor.name, forward: await forwardCheck(model, spec.fixture, spec.encoder_decoder), cases: {} };
  for (const c of spec.cases) {
    const out = { ids: await generate(model, c, spec.encoder_decoder, c.num_beams) };
    if (c.num_beams > 1) out.greedy = await generate(model, c, spec.encoder_decoder, 1);
    entry.cases[c.name] = out;
  }
  await model.dispose();
  result[name] = entry;
}
process.stdout.write(JSON.stringify(result) + '\n');
