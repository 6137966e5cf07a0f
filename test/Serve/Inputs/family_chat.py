"""A model family's chat, end to end: its checkpoint layout, its tokenizer
and its own chat template, through `generate --text` and `serve`.

    python3 family_chat.py prepare FIXTURE_DIR TOKENIZER_DIR TEMPLATE.json OUT [--special TOKEN]... [--plain TOKEN]...
    python3 family_chat.py check ROOT_URL MODEL PROGRAM WEIGHTS TOKENIZER_DIR HF_TOKENIZERS_DIR

prepare writes OUT/model/config.json (the fixture's config.json with the
tokenizer's vocabulary size and token ids, and a context of at least 256
positions: a checkpoint of the family that
`tfmc` compiles and `init-weights` fills) and OUT/tok (the tokenizer
fixture's files, its tokenizer_config.json given TEMPLATE.json's
chat_template, bos_token and eos_token; --special adds a special token to
tokenizer.json's added tokens, for a template's markers that a small
fixture vocabulary lacks, and --plain an added token that is not special,
which decodes as text as Qwen2.5's <tool_call> does).

check compares with tokenizers.js (hf_tokenize.mjs) and Python's Jinja2
(render_jinja2.py), one line each:
  - text: `PROGRAM generate --tokenizer DIR --text T` prints the text
    that the ids `generate --prompt` gives on tokenizers.js's ids of T
    (with the post-processor's special tokens) add to the prompt's, as
    tokenizers.js decodes them: decode(prompt + new) less decode(prompt),
    as transformers' text-generation pipeline returns new text (a
    SentencePiece continuation keeps the space its first token starts
    with, which decode(new) alone would strip);
  - chat: a chat completion's token_ids are those `generate --prompt`
    gives on tokenizers.js's ids of Jinja2's rendering of the template
    (no special tokens added: the template writes them), with the
    directory's eos ids; usage.prompt_tokens their count; the content
    their text as tokenizers.js decodes it, in the prompt's context.
Exits 1 on any failure.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def load(path, default=None):
    if default is not None and not os.path.exists(path):
        return default
    with open(path) as f:
        return json.load(f)


def dump(value, path):
    with open(path, "w") as f:
        json.dump(value, f, indent=1)


def prepare(fixture, tokenizer, template, out, specials, plains=()):
    tok = os.path.join(out, "tok")
    model = os.path.join(out, "model")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(model)
    shutil.copytree(tokenizer, tok)
    t = load(os.path.join(tok, "tokenizer.json"))
    size = 1 + max(list(t["model"]["vocab"].values()) + [a["id"] for a in t["added_tokens"]])
    for content, special in [(c, True) for c in specials] + [(c, False) for c in plains]:
        t["added_tokens"].append({"id": size, "content": content, "single_word": False, "lstrip": False,
                                  "rstrip": False, "normalized": False, "special": special})
        size += 1
    dump(t, os.path.join(tok, "tokenizer.json"))
    settings = load(os.path.join(tok, "tokenizer_config.json"), {})
    settings.update(load(template))
    dump(settings, os.path.join(tok, "tokenizer_config.json"))
    ids = load(os.path.join(tok, "config.json"), {})
    ids.update(load(os.path.join(tok, "generation_config.json"), {}))
    c = load(os.path.join(fixture, "config.json"))
    c["vocab_size"] = size
    # Room for a template's preamble (Llama 3.1's dates) and the answer.
    c["max_position_embeddings"] = max(c["max_position_embeddings"], 256)
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        if key in ids:
            c[key] = ids[key]
    dump(c, os.path.join(model, "config.json"))


def node(hf_tokenizers, tok, requests):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(requests, f)
    out = subprocess.run(["node", os.path.join(HERE, "hf_tokenize.mjs"), hf_tokenizers, tok, f.name],
                         check=True, capture_output=True, text=True).stdout
    os.unlink(f.name)
    return [json.loads(line) for line in out.splitlines()]


def post(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read().decode())
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def check(root, model, program, weights, tok, hf_tokenizers):
    failures = 0

    def report(ok, line):
        nonlocal failures
        failures += not ok
        print(("" if ok else "FAIL: ") + line)

    ids = load(os.path.join(tok, "config.json"), {})
    ids.update(load(os.path.join(tok, "generation_config.json"), {}))
    eos = ids["eos_token_id"]
    eos = eos if isinstance(eos, list) else [eos]
    eos_args = [x for e in eos for x in ("--eos", str(e))]

    def generate(prompt):
        out = subprocess.run([program, "generate", "--weights", weights, "--prompt",
                              ",".join(map(str, prompt)), "--max-new-tokens", "8"] + eos_args,
                             check=True, capture_output=True, text=True).stdout
        return [int(t) for t in out.split()]

    def added_text(prompt, new):
        whole, before = node(hf_tokenizers, tok, [{"decode": prompt + new}, {"decode": prompt}])
        assert whole["text"].startswith(before["text"])
        return {"text": whole["text"][len(before["text"]):]}

    # Text in and out.
    text = "Hello world"
    [prompt] = node(hf_tokenizers, tok, [{"encode": text, "special": True}])
    new = generate(prompt["ids"])
    decoded = added_text(prompt["ids"], new)
    printed = subprocess.run([program, "generate", "--weights", weights, "--tokenizer", tok, "--text",
                              text, "--max-new-tokens", "8"], check=True, capture_output=True,
                             text=True).stdout.removesuffix("\n")
    report(printed == decoded["text"],
           f"text: {len(prompt['ids'])} prompt ids, {len(new)} new, the printed text is "
           f"tokenizers.js's: {printed == decoded['text']}")
    if printed != decoded["text"]:
        print(f"  printed {printed!r}, tokenizers.js {decoded['text']!r}, ids {new}")

    # Chat with the directory's template.
    messages = [{"role": "user", "content": "Hello world"}]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as cases:
        json.dump([{"name": "chat", "messages": messages, "add_generation_prompt": True}], cases)
    rendered = subprocess.run([sys.executable, os.path.join(HERE, "render_jinja2.py"),
                               os.path.join(tok, "tokenizer_config.json"), cases.name],
                              check=True, capture_output=True, text=True).stdout
    os.unlink(cases.name)
    rendered = json.loads(rendered.splitlines()[0])["output"]
    [chat] = node(hf_tokenizers, tok, [{"encode": rendered, "special": False}])
    expected = generate(chat["ids"])
    content = added_text(chat["ids"], expected)
    status, answer = post(root + "/v1/chat/completions",
                          {"model": model, "messages": messages, "max_tokens": 8, "temperature": 0})
    ok = status == 200
    if ok:
        choice = answer["choices"][0]
        ok = (choice["token_ids"] == expected and answer["usage"]["prompt_tokens"] == len(chat["ids"])
              and choice["message"]["content"] == content["text"])
    report(ok, f"chat: {len(chat['ids'])} prompt ids (Jinja2's text, tokenizers.js's ids), "
               f"{len(expected)} new, equal to generate and tokenizers.js: {ok}")
    if not ok:
        print(f"  status {status}: {answer}; expected {expected}, {content['text']!r}, "
              f"prompt {len(chat['ids'])}, rendered {rendered!r}")
    return 1 if failures else 0


def main():
    command, args = sys.argv[1], sys.argv[2:]
    if command == "prepare":
        added = {"--special": [], "--plain": []}
        for flag, found in added.items():
            while flag in args:
                i = args.index(flag)
                found.append(args[i + 1])
                args = args[:i] + args[i + 2:]
        prepare(*args, added["--special"], added["--plain"])
    elif command == "check":
        sys.exit(check(*args))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
