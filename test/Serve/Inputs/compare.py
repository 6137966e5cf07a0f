#!/usr/bin/env python3
"""compare.py --reference NAME [--template T] CASES.json REFERENCE.jsonl OURS.jsonl

Compares tfmc-chat-template's renderings (OURS.jsonl) with a reference's
(render.mjs: @huggingface/jinja; render_jinja2.py: Jinja2), case by case, in
CASES.json's order. Per case:
  - an output must be byte for byte the reference's output;
  - raise_exception's message must be the reference's: Jinja2's raised
    message, or the message of @huggingface/jinja's error (it throws
    raise_exception's argument as a plain Error);
  - any other error must meet an error of the reference (messages differ
    by implementation).
A case of CASES.json may declare that @huggingface/jinja departs from
Jinja2 on a template: "diverges": {"T": "why"}. With --reference hf-jinja
and --template T such a case must then differ from @huggingface/jinja's
rendering (so the declaration stays true); the Jinja2 comparison holds every
case to Jinja2's output, declared or not.

Prints `N cases: M identical to NAME's (O outputs, R raise_exception
messages, E errors)`, with `, D differ as declared` when some do, and exits
0; or prints each mismatch and exits 1.
"""
import argparse
import json
import sys

NAMES = {"hf-jinja": "@huggingface/jinja", "jinja2": "Jinja2"}


def load_lines(path):
    with open(path, encoding="utf-8") as f:
        # Lines end at "\n" only: a rendering may hold U+2028 or U+0085 raw.
        return [json.loads(line) for line in f.read().split("\n") if line.strip()]


def matches(ours, ref, reference):
    """How one case agrees ("output", "raised", "error"), or None."""
    if "output" in ours:
        return "output" if ref.get("output") == ours["output"] and "output" in ref else None
    if "raised" in ours:
        # @huggingface/jinja throws raise_exception's message as an Error.
        message = ref.get("raised") if reference == "jinja2" else ref.get("error")
        return "raised" if message == ours["raised"] else None
    return "error" if "error" in ref else None


def show(value):
    return json.dumps(value, ensure_ascii=False)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reference", required=True, choices=sorted(NAMES))
    parser.add_argument("--template", help="the template's name in \"diverges\" declarations")
    parser.add_argument("cases")
    parser.add_argument("reference_lines")
    parser.add_argument("ours_lines")
    args = parser.parse_args()
    with open(args.cases, encoding="utf-8") as f:
        cases = json.load(f)
    reference, ours = load_lines(args.reference_lines), load_lines(args.ours_lines)
    name = NAMES[args.reference]
    if not (len(cases) == len(reference) == len(ours)):
        print(f"error: {len(cases)} cases, {len(reference)} reference lines, {len(ours)} lines of ours")
        return 1
    counts = {"output": 0, "raised": 0, "error": 0}
    declared = failures = 0
    for case, ref, our in zip(cases, reference, ours):
        if not (case["name"] == ref["name"] == our["name"]):
            print(f"error: case {case['name']!r} is {ref['name']!r} in the reference, {our['name']!r} in ours")
            return 1
        how = matches(our, ref, args.reference)
        diverges = args.reference == "hf-jinja" and args.template in case.get("diverges", {})
        if diverges:
            if how is not None:
                print(f"case {case['name']!r}: declared to differ from {name} on {args.template} "
                      f"({case['diverges'][args.template]}), but it agrees: {show(our)}")
                failures += 1
            else:
                declared += 1
            continue
        if how is None:
            print(f"case {case['name']!r}: differs from {name}:\n  {name}: {show(ref)}\n  tfmc: {show(our)}")
            failures += 1
        else:
            counts[how] += 1
    if failures:
        print(f"{failures} mismatches over {len(cases)} cases")
        return 1
    same = sum(counts.values())
    parts = [f"{counts['output']} outputs"]
    if counts["raised"]:
        parts.append(f"{counts['raised']} raise_exception messages")
    if counts["error"]:
        parts.append(f"{counts['error']} errors")
    summary = f"{len(cases)} cases: {same} identical to {name}'s ({', '.join(parts)})"
    if declared:
        summary += f", {declared} differ as declared"
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
