#!/usr/bin/env python3
"""Checks that a program's kernels use no instruction beyond its CPU check:
every mnemonic of the disassembly (objdump -d --no-show-raw-insn) that belongs
to an x86 extension past AVX-512 F/CD/BW/DQ/VL must have that extension in the
program's feature list (the space-separated LLVM names the glue embeds, found
with `strings`: the line holding --containing).

  isa_check.py ASM STRINGS --containing FEATURE [--features "LIST"]
               [--run-time FEATURE=REGEX]...

--features replaces the embedded list (a test that the check can fail).
--run-time FEATURE=REGEX: FEATURE's instructions inside functions whose
(mangled) names match REGEX are the runtime's, chosen by the CPU at run
time (runtime/ukernels/Microkernels.cpp: AMX's form only where cpuHasAmx()
holds), not the kernels': counted apart, never a failure; anywhere else
they are checked as every other.
The table names each extension's mnemonics as the Intel SDM lists them; only
extensions a compiler emits for ordinary vector code are listed (AMX and
AVX-VNNI as well: a Halide target can enable them)."""
import argparse
import re
import sys

# LLVM feature name -> mnemonics (regular expressions, whole mnemonic).
EXTENSIONS = {
    "avx512fp16": [r"vmovw", r"vmovsh", r"v(add|sub|mul|div|max|min|sqrt|rcp|rsqrt|scalef|getexp|getmant|reduce|"
                   r"rndscale|fpclass|cmp)(p|s)h", r"vf(n?m(add|sub)|madd|msub)[0-9]*(p|s)h", r"vcvtph2psx", r"vcvtps2phx",
                   r"vcvtt?(sh|ph)2(ss|sd|si|usi|w|uw|dq|udq|qq|uqq|pd)",
                   r"vcvt(ss|sd|si|usi|w|uw|dq|udq|qq|uqq|pd)2(sh|ph)",
                   r"vfc?mulc(p|s)h", r"vfc?maddc(p|s)h"],
    "avx512bf16": [r"vdpbf16ps", r"vcvtne2?ps2bf16"],
    "avx512vnni": [r"vpdpbusds?", r"vpdpwssds?"],
    "avx512ifma": [r"vpmadd52[hl]uq"],
    "avx512vbmi": [r"vpermb", r"vpermt2b", r"vpermi2b", r"vpmultishiftqb"],
    "avx512vbmi2": [r"vpexpand[bw]", r"vpcompress[bw]", r"vpshl?dv?[wdq]", r"vpshrdv?[wdq]"],
    "avx512bitalg": [r"vpopcnt[bw]", r"vpshufbitqmb"],
    "avx512vpopcntdq": [r"vpopcnt[dq]"],
    "gfni": [r"v?gf2p8\w+"],
    "vaes": [r"vaes\w+"],
    "vpclmulqdq": [r"vpclmulqdq"],
    "amx-tile": [r"ldtilecfg", r"sttilecfg", r"tileloadd\w*", r"tilestored", r"tilezero", r"tilerelease"],
    "amx-bf16": [r"tdpbf16ps"],
    "amx-int8": [r"tdpb[su][su]d"],
}
PATTERNS = [(feature, re.compile(rf"^(?:{'|'.join(alternatives)})$"))
            for feature, alternatives in EXTENSIONS.items()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("asm")
    ap.add_argument("strings")
    ap.add_argument("--containing", required=True)
    ap.add_argument("--features")
    ap.add_argument("--run-time", action="append", default=[])
    args = ap.parse_args()
    run_time = {}
    for item in args.run_time:
        feature, _, regex = item.partition("=")
        run_time[feature] = re.compile(regex)
    if args.features is not None:
        features = set(args.features.split())
    else:
        lists = [line.split() for line in open(args.strings, errors="replace")
                 if args.containing in line.split() and line.startswith("sse4.1 ")]
        if len(lists) != 1:
            sys.exit(f"isa_check.py: {len(lists)} feature lists hold {args.containing} in {args.strings}")
        features = set(lists[0])
    used, chosen = {}, {}
    function = ""
    for line in open(args.asm, errors="replace"):
        label = re.match(r"^[0-9a-f]+ <(.*)>:$", line.strip())
        if label:
            function = label.group(1)
            continue
        fields = line.split("\t")
        if len(fields) < 2 or not fields[0].rstrip().endswith(":"):
            continue
        words = fields[1].split()
        if words and words[0].startswith("{"):  # {vex} and other prefixes
            words = words[1:]
        if not words:
            continue
        mnemonic = words[0]
        for feature, pattern in PATTERNS:
            if pattern.match(mnemonic):
                where = (chosen if feature in run_time and run_time[feature].search(function)
                         else used)
                where.setdefault(feature, {}).setdefault(mnemonic, 0)
                where[feature][mnemonic] += 1
    missing = [(feature, sorted(used[feature])) for feature in sorted(used) if feature not in features]
    for feature, mnemonics in missing:
        print(f"FAIL: {', '.join(mnemonics)}: needs {feature}, which the program's CPU check does not ask for")
    print(f"{'ok' if not missing else 'not ok'}: extensions used past AVX-512 F/CD/BW/DQ/VL: "
          + (", ".join(f"{f} ({sum(used[f].values())})" for f in sorted(used)) or "none"))
    if chosen:
        print("chosen at run time: " + ", ".join(f"{f} ({sum(chosen[f].values())})" for f in sorted(chosen)))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
