#!/bin/sh
# make_plan.sh TFMC MODEL.tfm OUT.json [tfmc flags...]: the plans (JSON) that
# `tfmc MODEL --emit obj` links into a program, as the runtime reads them.
# data/run-input/plan.json and corpus/plan/ were made with it (README.md);
# rerun it when the plan format changes.
set -eu
tfmc=$1 model=$2 out=$3
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$tfmc" "$model" --emit obj -o "$work/model" "$@"
printf '#include <stdio.h>\nextern const char tfmc_plan_json[];\nint main(void) { fputs(tfmc_plan_json, stdout); return 0; }\n' >"$work/print.c"
cc "$work/print.c" "$work/model.o" -lpthread -ldl -lm -o "$work/print"
"$work/print" >"$out"
