// node bert-reference.mjs TRANSFORMERS_DIR TOKENIZER_DIR TEXTS.json
//
// BERT's inputs as the npm package @huggingface/transformers
// (transformers.js, pure JavaScript) gives them: its AutoTokenizer, loaded
// from TOKENIZER_DIR (tokenizer.json + tokenizer_config.json, no hub), on
// each element of TEXTS.json (a text, or a [text, text] pair), with special
// tokens and no truncation; one JSON line per element:
//   {"ids": [...], "type_ids": [...], "text": decode(ids)}
import fs from 'fs';
import path from 'path';
import { pathToFileURL } from 'url';

const [packageDir, tokenizerDir, textsPath] = process.argv.slice(2);
const t = await import(pathToFileURL(path.join(packageDir, 'dist', 'transformers.node.mjs')).href);
t.env.allowRemoteModels = false;
t.env.localModelPath = path.dirname(path.resolve(tokenizerDir)) + path.sep;
const tokenizer = await t.AutoTokenizer.from_pretrained(path.basename(path.resolve(tokenizerDir)));
const texts = JSON.parse(fs.readFileSync(textsPath, 'utf-8'));
const flat = x => (Array.isArray(x[0]) ? x[0] : x).map(Number);
const lines = texts.map(item => {
  const pair = Array.isArray(item);
  const encoded = pair ? tokenizer(item[0], { text_pair: item[1] }) : tokenizer(item);
  const ids = flat(encoded.input_ids.tolist());
  const type_ids = flat(encoded.token_type_ids.tolist());
  return JSON.stringify({ ids, type_ids, text: tokenizer.decode(ids) });
});
process.stdout.write(lines.map(line => line + '\n').join(''));
