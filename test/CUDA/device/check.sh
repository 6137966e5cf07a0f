#!/bin/bash
# check.sh BUILD RESULTS: judges, here, what run.sh brought back from the GPU,
# with the checks of test/CUDA/{run-fixtures,generate,bench,c-library}.test:
# tfmc-compare against the fixtures' PyTorch outputs (the CPU tests'
# tolerance), the tests' FileCheck lines, and the CPU build's ids.
BUILD=$(realpath "$1"); R=$2
SRC=$(cd "$(dirname "$0")/../../.." && pwd); FX=$SRC/test/fixtures
FC=$(command -v FileCheck || ls /usr/lib/llvm-19/bin/FileCheck)
CMP=$BUILD/test/tools/tfmc-compare; TFMC=$BUILD/tools/tfmc/tfmc
pass=0; fail=0
ok() { if [ "$1" = 0 ]; then pass=$((pass+1)); echo "PASS $2"; else fail=$((fail+1)); echo "FAIL $2"; fi; }
positions() { grep -A20 "^$1" "$SRC/test/CUDA/run-fixtures.test" | sed -n "s/^$1: //p" | head -1; }
for f in decoder_pre encdec_post encoder_post encoder_pre_sinusoidal gpt2_hf encdec_window decoder_pre_sm90; do
  fx=${f%_sm90}; prefix=$(echo $fx | tr a-z_ A-Z-)
  "$CMP" "$FX/$fx/expected.safetensors" "$R/$f.safetensors" --inputs "$FX/$fx/inputs.safetensors" > "$R/cmp-$f.txt" 2>&1
  rc=$?; cat "$R/cmp-$f.txt"
  [ $rc = 0 ] && printf 'CHECK: %s\n' "$(positions $prefix)" | "$FC" /dev/stdin --input-file "$R/cmp-$f.txt"; ok $? "run-fixtures $f"
done
# --weight-dtype: the CUDA build against the CPU build of the same dtype
# (the same widened weights; only the order of fp32 sums differs).
for dt in bf16 int8; do
  for f in decoder_pre gpt2_hf; do
    if [ ! -f "$R/run-${f}_$dt.rc" ]; then echo "SKIP weight-dtype $dt $f (not run)"; continue; fi
    if [ "$(cat $R/run-${f}_$dt.rc)" != 0 ]; then ok 1 "weight-dtype $dt $f: $(head -1 $R/run-${f}_$dt.err)"; continue; fi
    src=$FX/$f/model.tfm; w=$FX/$f/weights.safetensors
    [ $f = gpt2_hf ] && src=$FX/$f && w=$FX/$f/model.safetensors
    cpubin=$(mktemp -d)
    "$TFMC" "$src" --max-batch 4 --weight-dtype $dt -o $cpubin/m &&
      $cpubin/m run --weights "$w" --input "$FX/$f/inputs.safetensors" --output $cpubin/out.safetensors &&
      "$CMP" $cpubin/out.safetensors "$R/${f}_$dt.safetensors" --inputs "$FX/$f/inputs.safetensors"; ok $? "weight-dtype $dt $f: CUDA = CPU"
    rm -rf $cpubin
  done
done
# int8act.test: its reference checks and FileCheck lines.
i8=$SRC/test/CUDA/int8act.test
for c in "decoder_pre_i8a decoder_pre DECODER" "encdec_post_i8a encdec_post ENCDEC" \
         "gpt2_hf_i8a gpt2_hf GPT2" "decoder_pre_i4a decoder_pre DECODER4"; do
  set -- $c; extra=; [ $3 = DECODER4 ] && extra=int4
  [ "$(cat $R/run-$1.rc 2>/dev/null)" = 0 ] &&
    python3 "$SRC/test/E2E/Inputs/int8act_check.py" "$FX" $2 "$R/$1.safetensors" $extra |
    "$FC" "$i8" --check-prefix=$3 --implicit-check-not=FAIL; ok $? "int8act $1"
done
for f in decoder_pre_i8a gpt2_hf_i8a; do
  [ "$(cat $R/greedy-$f.rc 2>/dev/null)" = 0 ] && "$FC" "$i8" --check-prefix=GREEDY --input-file "$R/greedy-$f.out"; ok $? "int8act generate: PyTorch's ids ($f)"
done
for g in decoder seq2seq gpt2; do
  [ "$(cat $R/greedy-$g.rc)" = 0 ] && ! grep -q MISMATCH "$R/greedy-$g.out"; ok $? "generate: PyTorch's ids ($g)"
done
cpu=$(mktemp -d)
"$TFMC" "$FX/decoder_pre/model.tfm" -o $cpu/decoder_cpu
for eos in "" "--eos 12"; do
  $cpu/decoder_cpu generate --weights "$FX/decoder_pre/weights.safetensors" --prompt 27,6,14,3,59,33 --max-new-tokens 10 $eos > $cpu/ids
  name=gen-decoder${eos:+-eos}; cmp -s $cpu/ids "$R/$name.out"; ok $? "generate: same ids on CPU and CUDA ($name: $(cat $cpu/ids))"
done
"$CMP" "$R/full.safetensors" "$R/gen.safetensors" --last-positions > "$R/cmp-cache.txt" 2>&1 && cat "$R/cmp-cache.txt" &&
  grep -q "logits: max |diff| .* over 9 of 1 x 9 positions" "$R/cmp-cache.txt"; ok $? "generate: prefill + decode = forward"
sed -n 's/^CHECK/CHECK/p' "$SRC/test/CUDA/bench.test" > $cpu/bench.chk
[ "$(cat $R/bench-forward.rc)" = 0 ] && "$FC" $cpu/bench.chk --input-file "$R/bench-forward.out"; ok $? "bench forward"
[ "$(cat $R/bench-decode.rc)" = 0 ] && "$FC" "$SRC/test/CUDA/bench.test" --check-prefix=DECODE --input-file "$R/bench-decode.out"; ok $? "bench decode_step"
"$FC" "$SRC/test/CUDA/c-library.test" --input-file "$R/capi.out" &&
  "$CMP" "$FX/encoder_pre_sinusoidal/expected.safetensors" "$R/capi.safetensors" --inputs "$FX/encoder_pre_sinusoidal/inputs.safetensors" |
  "$FC" "$SRC/test/CUDA/c-library.test" --check-prefix=COMPARE; ok $? "c-library"
spec=$FX/encdec_post/generate.json
"$TFMC" "$FX/encdec_post/model.tfm" -o $cpu/seq2seq_cpu
$cpu/seq2seq_cpu generate --weights "$FX/encdec_post/weights.safetensors" --max-new-tokens 10 \
  --source $(python3 -c "import json;print(','.join(map(str,json.load(open('$spec'))['source'])))") \
  --bos $(python3 -c "import json;print(json.load(open('$spec'))['bos'])") > $cpu/ids
[ -f "$R/gen-seq2seq.out" ] && cmp -s $cpu/ids "$R/gen-seq2seq.out"; ok $? "generate: same ids on CPU and CUDA (seq2seq: $(cat $cpu/ids))"
for s in memcheck-decoder_pre memcheck-encdec_window racecheck-encdec_post racecheck-decoder racecheck-gpt2_hf synccheck-decoder synccheck-encdec_window; do
  [ -f "$R/$s.rc" ] || continue
  [ "$(cat $R/$s.rc)" = 0 ]; ok $? "$s ($(grep -h 'SUMMARY' $R/$s.out | head -1))"
done
rm -rf $cpu
echo "passed $pass, failed $fail"
