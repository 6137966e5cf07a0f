// node hf-reference.mjs TOKENIZERS_DIR TOKENIZER_JSON_DIR TEXTS.json
//
// The ids the npm package @huggingface/tokenizers (tokenizers.js, the pure
// JavaScript port of Hugging Face's tokenizers) gives each string of
// TEXTS.json, without special tokens added, and the text they decode to,
// one JSON object {"ids": [...], "text": "..."} per line; then the ids with
// special tokens (what the post-processor adds) for the first text, on a
// last line prefixed "special: ".
import fs from 'fs';
import path from 'path';
import { pathToFileURL } from 'url';

const [packageDir, tokenizerDir, textsPath] = process.argv.slice(2);
const entry = JSON.parse(fs.readFileSync(path.join(packageDir, 'package.json'), 'utf-8'));
const { Tokenizer } = await import(pathToFileURL(path.join(packageDir, entry.module)).href);
const read = name => {
  const file = path.join(tokenizerDir, name);
  return fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf-8')) : {};
};
const tokenizer = new Tokenizer(read('tokenizer.json'), read('tokenizer_config.json'));
const texts = JSON.parse(fs.readFileSync(textsPath, 'utf-8'));
const lines = texts.map(text => {
  const ids = tokenizer.encode(text, { add_special_tokens: false }).ids;
  // No clean-up of spaces before punctuation: a display option of
  // transformers, not the tokenizer's decoding.
  const decoded = ids.length
    ? tokenizer.decode(ids, { clean_up_tokenization_spaces: false }) : '';
  return JSON.stringify({ ids, text: decoded });
});
lines.push('special: ' + tokenizer.encode(texts[0]).ids.join(' '));
process.stdout.write(lines.map(line => line + '\n').join(''));
