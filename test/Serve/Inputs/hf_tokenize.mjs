// node hf_tokenize.mjs TOKENIZERS_DIR TOKENIZER_JSON_DIR REQUESTS.json
//
// tokenizers.js (the npm package @huggingface/tokenizers) on a list of
// requests, one JSON line of output each:
//   {"encode": TEXT, "special": BOOL} -> {"ids": [...]}  (special: with the
//       post-processor's tokens, as a text prompt is encoded)
//   {"decode": [IDS]}                 -> {"text": "..."}  (special tokens
//       skipped, as a chat answer's content is decoded)
import fs from 'fs';
import path from 'path';
import { pathToFileURL } from 'url';

const [packageDir, tokenizerDir, requestsPath] = process.argv.slice(2);
const entry = JSON.parse(fs.readFileSync(path.join(packageDir, 'package.json'), 'utf-8'));
const { Tokenizer } = await import(pathToFileURL(path.join(packageDir, entry.module)).href);
const read = name => {
  const file = path.join(tokenizerDir, name);
  return fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf-8')) : {};
};
const tokenizer = new Tokenizer(read('tokenizer.json'), read('tokenizer_config.json'));
const requests = JSON.parse(fs.readFileSync(requestsPath, 'utf-8'));
const lines = requests.map(request => {
  if ('encode' in request)
    return JSON.stringify({ ids: tokenizer.encode(request.encode,
      { add_special_tokens: Boolean(request.special) }).ids });
  return JSON.stringify({ text: request.decode.length ? tokenizer.decode(request.decode,
    { skip_special_tokens: true, clean_up_tokenization_spaces: false }) : '' });
});
process.stdout.write(lines.map(line => line + '\n').join(''));
