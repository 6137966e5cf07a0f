#!/bin/sh
# make demo: compiles the Transformer base model (examples/transformer_base.tfm,
# the paper's sizes, 82 M parameters) to a native program, gives it
# deterministic random weights (no download) and runs it, saying how long
# each step took.
#   examples/demo.sh TFMC OUT_DIR
set -eu
TFMC=$1
DIR=$2
MODEL=examples/transformer_base.tfm
BIN=$DIR/transformer_base
WEIGHTS=$DIR/weights.safetensors
mkdir -p "$DIR"

now() { date +%s.%N; }
# seconds since $1, two decimals
since() { echo "$(now) $1" | awk '{ printf "%.2f", $1 - $2 }'; }

echo "== $TFMC $MODEL -o $BIN"
start=$(now)
"$TFMC" "$MODEL" -o "$BIN"
echo "compiled in $(since "$start") s ($("$TFMC" "$MODEL" --stats | sed -n 's/^distinct kernels: //p') distinct kernels, cached in ${TFMC_CACHE_DIR:-$HOME/.cache/tfmc}: a second compile takes about a second)"

echo "== $BIN info"
"$BIN" info

echo "== $BIN init-weights --seed 1: deterministic random weights"
start=$(now)
"$BIN" init-weights --seed 1 --output "$WEIGHTS"
echo "written in $(since "$start") s"

# With random weights the ids mean nothing (a post-norm model with a tied
# output tends to echo its input); the point is the timing.
echo "== $BIN run: source ids 5..12, decoder ids 1,5,6,7: logits and their argmax per position"
start=$(now)
"$BIN" run --weights "$WEIGHTS" --ids 5,6,7,8,9,10,11,12 --decoder-ids 1,5,6,7 2> "$DIR/run.err"
total=$(since "$start")
cat "$DIR/run.err" >&2
forward=$(sed -n 's/^forward: .* in \([0-9.]*\) ms$/\1/p' "$DIR/run.err")
echo "$total $forward" | awk '{ printf "load + run in %.2f s: loading the weights and starting %.2f s, the forward pass %.1f ms\n", $1, $1 - $2 / 1000, $2 }'

echo "== $BIN generate: greedy decoding with the KV cache, 16 new tokens"
"$BIN" generate --weights "$WEIGHTS" --source 5,6,7,8,9,10,11,12 --bos 1 --max-new-tokens 16 --stats
