#!/usr/bin/env python3
"""wordpiece_json.py DIR OUT_DIR: writes OUT_DIR/tokenizer.json (and a copy
of tokenizer_config.json), the Hugging Face tokenizers form of BERT's
vocab.txt + tokenizer_config.json in DIR: BertNormalizer, BertPreTokenizer,
WordPiece (## continuations, 100 characters a word), [CLS] A [SEP], the
WordPiece decoder with its clean-up. A format conversion only: the
tokenizing is tokenizers.js's, the independent implementation the test
compares with."""
import json
import os
import shutil
import sys

src, out = sys.argv[1:3]
tokens = open(os.path.join(src, "vocab.txt"), encoding="utf-8").read().split("\n")
tokens = [t for t in tokens if t]
vocab = {t: i for i, t in enumerate(tokens)}
config = json.load(open(os.path.join(src, "tokenizer_config.json"), encoding="utf-8"))
lower = config.get("do_lower_case", True)
specials = [t for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]") if t in vocab]
special = lambda t: {"id": t, "type_id": 0}
tokenizer = {
    "version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [{"id": vocab[t], "content": t, "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False, "special": True} for t in specials],
    "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars":
                   config.get("tokenize_chinese_chars", True),
                   "strip_accents": config.get("strip_accents"), "lowercase": lower},
    "pre_tokenizer": {"type": "BertPreTokenizer"},
    "post_processor": {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": special("[CLS]")}, {"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": special("[SEP]")}],
        "pair": [{"SpecialToken": special("[CLS]")}, {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": special("[SEP]")}, {"Sequence": {"id": "B", "type_id": 1}},
                 {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
        "special_tokens": {t: {"id": t, "ids": [vocab[t]], "tokens": [t]}
                           for t in ("[CLS]", "[SEP]")}},
    "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
    "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
              "max_input_chars_per_word": 100, "vocab": vocab},
}
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
    json.dump(tokenizer, f, ensure_ascii=False)
shutil.copy(os.path.join(src, "tokenizer_config.json"), out)
