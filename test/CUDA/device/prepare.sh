#!/bin/bash
# prepare.sh BUILD DEST: compiles, on a machine without a GPU, every CUDA
# program that test/CUDA's `REQUIRES: cuda-device` tests run (same flags as
# the tests), plus GPT-2 small for the speed figures, into DEST with the
# shared libraries a bare CUDA image lacks and the scripts run.sh needs.
# DEST then travels to a GPU machine, where run.sh runs them; check.sh
# checks what came back here, with the tests' own FileCheck patterns and
# tfmc-compare.
set -euo pipefail
BUILD=$(realpath "$1"); DEST=$2
SRC=$(cd "$(dirname "$0")/../../.." && pwd)
TFMC=$BUILD/tools/tfmc/tfmc
FX=$SRC/test/fixtures
rm -rf "$DEST"; mkdir -p "$DEST/bin" "$DEST/lib"
c() { local out=$1; shift; echo "tfmc $* -o $out"; "$TFMC" "$@" -o "$DEST/bin/$out"; }
# run-fixtures.test
for f in decoder_pre encdec_post encoder_post encoder_pre_sinusoidal; do
  c $f "$FX/$f/model.tfm" --target cuda --max-batch 4; done
c gpt2_hf "$FX/gpt2_hf" --target cuda --max-batch 4
c encdec_window "$FX/encdec_window/model.tfm" --target cuda --max-batch 2
c decoder_pre_sm90 "$FX/decoder_pre/model.tfm" --target cuda-sm90 --max-batch 4
# generate.test and bench.test
c decoder "$FX/decoder_pre/model.tfm" --target cuda
c seq2seq "$FX/encdec_post/model.tfm" --target cuda
c gpt2 "$FX/gpt2_hf" --target cuda
# c-library.test
mkdir -p "$DEST/clib"
"$TFMC" "$FX/encoder_pre_sinusoidal/model.tfm" --target cuda --emit lib -o "$DEST/clib/model" --max-batch 4
cc -std=c99 -Wall -Wextra -Werror -I"$DEST/clib" "$SRC/test/E2E/Inputs/capi_main.c" "$DEST/clib/libmodel.a" \
  -lstdc++ -lfmt -lpthread -ldl -lm -o "$DEST/bin/capi_app"
rm -rf "$DEST/clib"
python3 "$SRC/test/E2E/Inputs/corrupt.py" to-text "$FX/encoder_pre_sinusoidal/inputs.safetensors" "$DEST/capi_ids.txt"
# Narrow weights (--weight-dtype): checked against the CPU build's output.
for dt in bf16 int8; do
  c decoder_pre_$dt "$FX/decoder_pre/model.tfm" --target cuda --max-batch 4 --weight-dtype $dt
  c gpt2_hf_$dt "$FX/gpt2_hf" --target cuda --max-batch 4 --weight-dtype $dt
done
# int8act.test: int8 activations over int8 and int4 weights.
for f in decoder_pre encdec_post; do
  c ${f}_i8a "$FX/$f/model.tfm" --target cuda --max-batch 4 --weight-dtype int8 --activations int8; done
c gpt2_hf_i8a "$FX/gpt2_hf" --target cuda --max-batch 4 --weight-dtype int8 --activations int8
c decoder_pre_i4a "$FX/decoder_pre/model.tfm" --target cuda --max-batch 4 --weight-dtype int4 --activations int8
# GPT-2 small (speed only; weights made there by init-weights --seed 1)
c gpt_small "$SRC/examples/gpt_small.tfm" --target cuda
c gpt_small_sm90 "$SRC/examples/gpt_small.tfm" --target cuda-sm90
c gpt_small_bf16 "$SRC/examples/gpt_small.tfm" --target cuda --weight-dtype bf16
c gpt_small_int8 "$SRC/examples/gpt_small.tfm" --target cuda --weight-dtype int8
# Shared libraries the programs need beyond glibc, libstdc++ and libgcc
# (fmt, the tokenizers' SentencePiece, Oniguruma and utf8proc, serve's
# cpp-httplib and what it links), read off ldd so that a new dependency
# travels too.
for lib in $(ldd "$DEST"/bin/* | awk '$3 ~ /^\// {print $3}' | sort -u |
             grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|ld-linux-x86-64)\.so'); do
  cp -L "$lib" "$DEST/lib/"; done
strip "$DEST"/bin/*   # symbols are not needed there; the bundle travels
cp "$SRC/test/E2E/Inputs/greedy.py" "$SRC/test/E2E/Inputs/ids.py" "$SRC/test/CUDA/device/run.sh" \
   "$SRC/test/CUDA/device/torch_gpt2.py" "$DEST/"
du -sh "$DEST"
