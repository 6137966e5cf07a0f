// node render.mjs JINJA_PACKAGE_DIR [CONFIG] CASES.json
//
// Renders the cases of CASES.json (tfmc-chat-template's --cases format)
// with @huggingface/jinja, Hugging Face's JavaScript Jinja for chat
// templates (transformers.js's), printing what tfmc-chat-template prints:
// one JSON line per case, {"name": N, "output": TEXT} or, when rendering
// throws, {"name": N, "error": MESSAGE} (raise_exception(M) throws an Error
// whose message is M: compare.py matches it with tfmc's {"raised": M}).
// CONFIG is a tokenizer_config.json: its chat_template, bos_token and
// eos_token (a string or an AddedToken object; null or absent: not passed).
import fs from 'fs';
import path from 'path';
import { pathToFileURL } from 'url';

const args = process.argv.slice(2);
if (args.length < 2 || args.length > 3) {
  process.stderr.write('usage: node render.mjs JINJA_PACKAGE_DIR [CONFIG] CASES.json\n');
  process.exit(2);
}
const [packageDir] = args;
const configPath = args.length === 3 ? args[1] : null;
const casesPath = args[args.length - 1];
const entry = JSON.parse(fs.readFileSync(path.join(packageDir, 'package.json'), 'utf-8'));
const { Template } = await import(pathToFileURL(path.join(packageDir, entry.module)).href);

const token = value => (typeof value === 'string' ? value
  : value && typeof value === 'object' && typeof value.content === 'string' ? value.content : undefined);
const config = configPath ? JSON.parse(fs.readFileSync(configPath, 'utf-8')) : {};
const cases = JSON.parse(fs.readFileSync(casesPath, 'utf-8'));

const lines = cases.map(c => {
  const items = { messages: c.messages ?? [], add_generation_prompt: c.add_generation_prompt ?? false };
  const bos = 'bos_token' in c ? token(c.bos_token) : token(config.bos_token);
  const eos = 'eos_token' in c ? token(c.eos_token) : token(config.eos_token);
  if (bos !== undefined) items.bos_token = bos;
  if (eos !== undefined) items.eos_token = eos;
  Object.assign(items, c.variables ?? {});
  try {
    const output = new Template(c.template ?? config.chat_template).render(items);
    return JSON.stringify({ name: c.name, output });
  } catch (e) {
    return JSON.stringify({ name: c.name, error: String(e.message) });
  }
});
process.stdout.write(lines.map(line => line + '\n').join(''));
