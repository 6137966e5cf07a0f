// node llama-cpp-reference.mjs NPM_DIR MODEL.gguf TEXTS.json
//
// llama.cpp's tokenizer, through the npm package node-llama-cpp (its
// prebuilt CPU library), on a GGUF file loaded with vocabOnly (the
// metadata, no tensors): for each string of TEXTS.json the ids of
// model.tokenize(text, true) (special tokens in the text are matched, as
// llama-cli and llama-server tokenize prompts; no BOS added) and the text
// of model.detokenize(ids, true) (special tokens as their text), one JSON
// object {"ids": [...], "text": "..."} per line; then a last line
// {"prompt": [...], "stop": [...]}: the first text as llama.cpp prompts it
// (BOS when shouldPrependBosToken, EOS when shouldAppendEosToken) and its
// eos and eot ids.
import {createRequire} from "module";
import fs from "fs";
import path from "path";
import {pathToFileURL} from "url";

const [npmDir, modelPath, textsPath] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(npmDir), "package.json"));
const {getLlama} = await import(pathToFileURL(require.resolve("node-llama-cpp")).href);
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath, vocabOnly: true});
const texts = JSON.parse(fs.readFileSync(textsPath, "utf-8"));
const lines = texts.map(text => {
    const ids = Array.from(model.tokenize(text, true));
    return JSON.stringify({ids, text: model.detokenize(ids, true)});
});
const t = model.tokens;
lines.push(JSON.stringify({
    prompt: [...(t.shouldPrependBosToken ? [t.bos] : []), ...Array.from(model.tokenize(texts[0], true)),
             ...(t.shouldAppendEosToken ? [t.eos] : [])],
    stop: [t.eos, t.eot].filter(id => id != null)}));
process.stdout.write(lines.map(line => line + "\n").join(""));
await model.dispose();
await llama.dispose();
