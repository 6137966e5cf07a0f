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
# The first (widest) variant's plans: runtime/core/Model.h's tfmc_variant.
cat >"$work/print.c" <<'EOF'
#include <stdio.h>
struct tfmc_variant { const char *target, *features; const void *kernels;
                      int num_kernels; const char *plan_json; };
extern const struct tfmc_variant tfmc_variants[];
int main(void) { fputs(tfmc_variants[0].plan_json, stdout); return 0; }
EOF
# Only the variant table is read: the microkernels the kernels call
# (tfmc_uk_*, in tfmc's runtime) are never called here, so empty ones do.
nm -u "$work/model.o" |
  awk '$1 == "U" && $2 ~ /^tfmc_uk_/ { print "void " $2 "(void) {}" }' \
  >>"$work/print.c"
cc "$work/print.c" "$work/model.o" -lpthread -ldl -lm -o "$work/print"
"$work/print" >"$out"
