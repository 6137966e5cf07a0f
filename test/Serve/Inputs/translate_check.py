"""Completions of an encoder-decoder (Marian) served one at a time.

    python3 translate_check.py ROOT_URL MODEL EXPECTED_1 EXPECTED_2 TEXT_1 TEXT_2

Sends both texts at once as completions (greedy, 12 tokens); each answer's
text must be the file EXPECTED_i's (what `generate --tokenizer --text`
prints for it alone, its final newline dropped). Exits 1 otherwise.
"""
import json
import sys
import threading
import urllib.request

root, model, expected_files, texts = sys.argv[1], sys.argv[2], sys.argv[3:5], sys.argv[5:7]
answers = [None, None]


def send(i):
    body = {"model": model, "prompt": texts[i], "max_tokens": 12, "temperature": 0}
    request = urllib.request.Request(root + "/v1/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        answers[i] = json.load(response)["choices"][0]


threads = [threading.Thread(target=send, args=(i,)) for i in range(2)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
ok = True
for i in range(2):
    expected = open(expected_files[i], encoding="utf-8").read().removesuffix("\n")
    same = answers[i]["text"] == expected
    ok &= same
    print(f"translation {i + 1}: {len(answers[i]['token_ids'])} tokens, same text as generate: {same}")
sys.exit(0 if ok else 1)
