#!/bin/bash
# run.sh DIR RESULTS: runs on the GPU machine what prepare.sh put in DIR
# (run from the repository root: fixtures are read from test/fixtures).
# Each step's stdout, stderr and exit code land in RESULTS/NAME.{out,err,rc};
# nothing is judged here (check.sh does that where lit and FileCheck are).
D=$(realpath "$1"); R=$2; mkdir -p "$R"
export LD_LIBRARY_PATH=$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} PATH=$D/bin:$PATH
FX=test/fixtures
step() { # step NAME SECONDS CMD...
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s%N)
  timeout "$limit" "$@" > "$R/$name.out" 2> "$R/$name.err"; local rc=$?
  echo $rc > "$R/$name.rc"
  printf '%-28s rc=%-3s %6dms  %s\n' "$name" $rc $(( ($(date +%s%N) - t0) / 1000000 )) \
    "$( [ $rc = 0 ] || head -c 300 "$R/$name.err" | tr '\n' ' ')"
}
# run-fixtures.test
for f in decoder_pre encdec_post encoder_post encoder_pre_sinusoidal encdec_window; do
  step run-$f 120 $f run --weights $FX/$f/weights.safetensors --input $FX/$f/inputs.safetensors --output $R/$f.safetensors; done
step run-gpt2_hf 120 gpt2_hf run --weights $FX/gpt2_hf/model.safetensors --input $FX/gpt2_hf/inputs.safetensors --output $R/gpt2_hf.safetensors
step run-decoder_pre_sm90 120 decoder_pre_sm90 run --weights $FX/decoder_pre/weights.safetensors --input $FX/decoder_pre/inputs.safetensors --output $R/decoder_pre_sm90.safetensors
# --weight-dtype builds (compared with the CPU build's outputs by check.sh)
for dt in bf16 int8; do
  step run-decoder_pre_$dt 120 decoder_pre_$dt run --weights $FX/decoder_pre/weights.safetensors --input $FX/decoder_pre/inputs.safetensors --output $R/decoder_pre_$dt.safetensors
  step run-gpt2_hf_$dt 120 gpt2_hf_$dt run --weights $FX/gpt2_hf/model.safetensors --input $FX/gpt2_hf/inputs.safetensors --output $R/gpt2_hf_$dt.safetensors
done
# int8act.test (checked by check.sh with int8act_check.py)
for f in decoder_pre_i8a encdec_post_i8a decoder_pre_i4a; do
  step run-$f 120 $f run --weights $FX/${f%_*}/weights.safetensors --input $FX/${f%_*}/inputs.safetensors --output $R/$f.safetensors; done
step run-gpt2_hf_i8a 120 gpt2_hf_i8a run --weights $FX/gpt2_hf/model.safetensors --input $FX/gpt2_hf/inputs.safetensors --output $R/gpt2_hf_i8a.safetensors
step greedy-decoder_pre_i8a 120 python3 $D/greedy.py $D/bin/decoder_pre_i8a $FX/decoder_pre/weights.safetensors $FX/lowprec/decoder_pre/generate_int8act.json
step greedy-gpt2_hf_i8a 120 python3 $D/greedy.py $D/bin/gpt2_hf_i8a $FX/gpt2_hf/model.safetensors $FX/lowprec/gpt2_hf/generate_int8act.json
# generate.test
step greedy-decoder 120 python3 $D/greedy.py $D/bin/decoder $FX/decoder_pre/weights.safetensors $FX/decoder_pre/generate.json
step greedy-seq2seq 120 python3 $D/greedy.py $D/bin/seq2seq $FX/encdec_post/weights.safetensors $FX/encdec_post/generate.json
step greedy-gpt2 120 python3 $D/greedy.py $D/bin/gpt2 $FX/gpt2_hf/model.safetensors $FX/gpt2_hf/generate.json
step gen-decoder 60 decoder generate --weights $FX/decoder_pre/weights.safetensors --prompt 27,6,14,3,59,33 --max-new-tokens 10
step gen-decoder-eos 60 decoder generate --weights $FX/decoder_pre/weights.safetensors --prompt 27,6,14,3,59,33 --max-new-tokens 10 --eos 12
step gen-seq2seq 60 seq2seq generate --weights $FX/encdec_post/weights.safetensors --source $(python3 -c 'import json;print(",".join(map(str,json.load(open("'$FX'/encdec_post/generate.json"))["source"])))') --bos $(python3 -c 'import json;print(json.load(open("'$FX'/encdec_post/generate.json"))["bos"])') --max-new-tokens 10
step gen-cache 60 decoder generate --weights $FX/decoder_pre/weights.safetensors --prompt 5,9,13,2,7,44,3 --max-new-tokens 9 --dump-logits $R/gen.safetensors
python3 $D/ids.py $R/gen-cache.out 5,9,13,2,7,44,3 > $R/all.txt
step run-cache 60 decoder run --weights $FX/decoder_pre/weights.safetensors --ids @$R/all.txt --output $R/full.safetensors
# bench.test
step bench-forward 120 decoder bench --weights $FX/decoder_pre/weights.safetensors --seq 8 --repeat 5 --warmup 1 --json
step bench-decode 120 decoder bench --weights $FX/decoder_pre/weights.safetensors --seq 8 --repeat 5 --warmup 1 --entry decode_step --json
# c-library.test
step capi 60 capi_app $FX/encoder_pre_sinusoidal/weights.safetensors $D/capi_ids.txt $R/capi.safetensors
# GPT-2 small: speed, against PyTorch on the same GPU
if [ -z "$SKIP_GPT" ]; then
W=/tmp/gpt_small.safetensors
step gpt-init 120 gpt_small init-weights --seed 1 --output $W
step gpt-info 60 gpt_small info
for b in gpt_small gpt_small_sm90 gpt_small_bf16 gpt_small_int8; do
  step $b-fwd128 180 $b bench --weights $W --seq 128 --repeat 30 --warmup 3 --json
  step $b-dec128 180 $b bench --weights $W --seq 128 --repeat 100 --warmup 5 --entry decode_step --json
done
step gpt-generate 180 gpt_small generate --weights $W --prompt $(python3 -c 'print(",".join(str((i*7919)%50257) for i in range(128)))') --max-new-tokens 64 --stats
[ -n "$SKIP_TORCH" ] || step torch-gpt2 300 env PYTHONUNBUFFERED=1 python3 $D/torch_gpt2.py
# Nsight Compute on one decode step's attention and linear kernels.
if [ -n "$NCU" ]; then
  for k in attention linear; do
    step ncu-decode-$k 180 ncu --kernel-name regex:_kernel_$k --launch-count $([ $k = attention ] && echo 26 || echo 12) --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis gpt_small bench --weights $W --seq 128 --repeat 1 --warmup 0 --entry decode_step
  done
fi
fi
# compute-sanitizer on small fixtures (Halide's kernels and the runtime's copies)
if [ -z "$SKIP_SANITIZER" ]; then
step memcheck-decoder_pre 90 compute-sanitizer --tool memcheck --error-exitcode 9 $D/bin/decoder_pre run --weights $FX/decoder_pre/weights.safetensors --input $FX/decoder_pre/inputs.safetensors --output $R/mc.safetensors
step memcheck-encdec_window 90 compute-sanitizer --tool memcheck --error-exitcode 9 $D/bin/encdec_window run --weights $FX/encdec_window/weights.safetensors --input $FX/encdec_window/inputs.safetensors --output $R/mc2.safetensors
step racecheck-encdec_post 120 compute-sanitizer --tool racecheck --error-exitcode 9 $D/bin/encdec_post run --weights $FX/encdec_post/weights.safetensors --input $FX/encdec_post/inputs.safetensors --output $R/rc.safetensors
step racecheck-decoder 120 compute-sanitizer --tool racecheck --error-exitcode 9 $D/bin/decoder generate --weights $FX/decoder_pre/weights.safetensors --prompt 27,6,14,3,59,33 --max-new-tokens 3
step synccheck-decoder 120 compute-sanitizer --tool synccheck --error-exitcode 9 $D/bin/decoder generate --weights $FX/decoder_pre/weights.safetensors --prompt 27,6,14,3,59,33 --max-new-tokens 3
step synccheck-encdec_window 120 compute-sanitizer --tool synccheck --error-exitcode 9 $D/bin/encdec_window run --weights $FX/encdec_window/weights.safetensors --input $FX/encdec_window/inputs.safetensors --output $R/sc.safetensors
step racecheck-gpt2_hf 120 compute-sanitizer --tool racecheck --error-exitcode 9 $D/bin/gpt2_hf run --weights $FX/gpt2_hf/model.safetensors --input $FX/gpt2_hf/inputs.safetensors --output $R/rc2.safetensors
fi
