// node reference.js GPT3_ENCODER_DIR TEXTS.json
//
// The ids the npm package gpt-3-encoder (an independent JavaScript port of
// OpenAI's GPT-2 encoder) gives each string of TEXTS.json (a JSON array),
// one JSON array per line, in order.
'use strict';
const fs = require('fs');
const path = require('path');

const [encoderDir, textsPath] = process.argv.slice(2);
const { encode } = require(path.resolve(encoderDir));
const texts = JSON.parse(fs.readFileSync(textsPath, 'utf-8'));
const lines = texts.map(text => JSON.stringify(encode(text)));
process.stdout.write(lines.map(line => line + '\n').join(''));
