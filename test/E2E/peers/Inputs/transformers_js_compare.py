#!/usr/bin/python3
"""transformers_js_compare.py CASES_JSON TRANSFORMERS_JS_JSON BIN_DIR

Runs `BIN_DIR/MODEL generate` (tfmc's programs, compiled from the fixtures)
for every run of CASES_JSON (transformers_js_export.py) and compares its ids
with transformers.js's (TRANSFORMERS_JS_JSON, transformers_js_generate.mjs)
and with the float64 torch modules' ("torch", written from Hugging Face's
modeling code by the export script):

  - transformers.js's full forward on the fixture's inputs must be within
    1e-4 of max(1, max |expected|) of expected.safetensors (the ONNX graphs
    as ONNX Runtime runs them are the fixture's model);
  - greedy runs: tfmc's ids, transformers.js's and torch's must be identical;
  - beam runs: tfmc --num-beams N must give torch's ids (test/E2E/Inputs/
    beam.py's search over the exported modules; the prompt's beam result
    differs from greedy's), and greedy search on the same prompt must give
    the same ids in tfmc, transformers.js and torch, other than the beams'. transformers.js 4.3.1 has no beam search (its
    generate keeps the first of the BeamSearchSampler's candidates, "TODO:
    Support beam search"): when its num_beams N gives its own greedy ids, the
    line says so and its ids are not compared; when they differ (a version
    that searches), they must be tfmc's.

Prints one line per run, exits 1 on any difference."""
import json
import os
import subprocess
import sys

TOLERANCE = 1e-4


def read_json(path):
    with open(path) as f:
        return json.load(f)


def main():
    cases_path, tjs_path, bin_dir = sys.argv[1:4]
    cases = read_json(cases_path)
    tjs = read_json(tjs_path)
    version = tjs.get("transformers_js", "?")
    ok = True
    counts = {"greedy": 0, "beams": 0}

    def bad(message):
        nonlocal ok
        ok = False
        print("MISMATCH " + message)

    for name, spec in cases.items():
        fixture = spec["fixture"]
        theirs = tjs.get(name)
        if theirs is None:
            bad("%s: transformers.js gave nothing" % name)
            continue
        fwd = theirs["forward"]
        line = ("%s: transformers.js %s %s forward vs expected.safetensors: %.1e of max |expected| over %d positions"
                % (name, version, theirs["class"], fwd["max_abs_diff_over_scale"], fwd["positions"]))
        if fwd["max_abs_diff_over_scale"] > TOLERANCE:
            bad(line + " (above %g)" % TOLERANCE)
        else:
            print(line)
        binary = os.path.join(bin_dir, name)
        for c in spec["cases"]:
            cmd = [binary, "generate", "--weights", os.path.join(fixture, "model.safetensors"),
                   "--max-new-tokens", str(c["max_new_tokens"])]
            if spec["encoder_decoder"]:
                cmd += ["--source", ",".join(map(str, c["source"])), "--bos", str(c["bos"])]
            else:
                cmd += ["--prompt", ",".join(map(str, c["prompt"]))]
            if c["eos"] is not None:
                cmd += ["--eos", str(c["eos"])]
            for word in c["bad_words"]:
                cmd += ["--bad-words", ",".join(map(str, word))]
            if c["num_beams"] > 1:
                cmd += ["--num-beams", str(c["num_beams"])]
            run = subprocess.run(cmd, capture_output=True, text=True)
            ours = [int(x) for x in run.stdout.split()] if run.returncode == 0 else None
            label = "%s %s (%s%s, %d new%s%s)" % (
                name, c["name"], "source" if spec["encoder_decoder"] else "prompt",
                " " + ",".join(map(str, c.get("source") or c.get("prompt"))), c["max_new_tokens"],
                ", eos %d" % c["eos"] if c["eos"] is not None else ", no eos",
                ", bad words %s" % c["bad_words"] if c["bad_words"] else "")
            if ours is None:
                bad("%s: tfmc failed (exit %d): %s" % (label, run.returncode, run.stderr.strip()))
                continue
            got = theirs["cases"].get(c["name"], {})
            text = " ".join(map(str, ours))
            if c["num_beams"] == 1:
                counts["greedy"] += 1
                if ours == got.get("ids") == c["torch"]:
                    print("%s: tfmc = transformers.js = torch: %s" % (label, text))
                else:
                    bad("%s: tfmc %s, transformers.js %s, torch %s" % (label, ours, got.get("ids"), c["torch"]))
                continue
            counts["beams"] += 1
            n = c["num_beams"]
            if ours != c["torch"]:
                bad("%s: tfmc --num-beams %d %s, beam.py's search %s" % (label, n, ours, c["torch"]))
                continue
            # Greedy on the same prompt, on each side: the beams must differ.
            greedy_cmd = cmd[:cmd.index("--num-beams")]
            run = subprocess.run(greedy_cmd, capture_output=True, text=True)
            our_greedy = [int(x) for x in run.stdout.split()] if run.returncode == 0 else None
            line = "%s: tfmc --num-beams %d = beam.py's search over the modules: %s" % (label, n, text)
            if not (our_greedy == got.get("greedy") == c["torch_greedy"]) or our_greedy == ours:
                bad("%s; greedy: tfmc %s, transformers.js %s, torch %s"
                    % (line, our_greedy, got.get("greedy"), c["torch_greedy"]))
                continue
            line += " (greedy, tfmc = transformers.js = torch: %s)" % " ".join(map(str, our_greedy))
            if got.get("ids") == got.get("greedy"):
                print("%s; transformers.js %s: num_beams %d gives its greedy ids (no beam search), not compared"
                      % (line, version, n))
            elif got.get("ids") == ours:
                print("%s; = transformers.js %s num_beams %d" % (line, version, n))
            else:
                bad("%s; transformers.js %s num_beams %d gives %s" % (line, version, n, got.get("ids")))
    if ok:
        print("%d greedy runs (and %d on the beams' prompts): tfmc's ids identical to transformers.js's; "
              "%d beam runs identical to beam.py's" % (counts["greedy"], counts["beams"], counts["beams"]))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
