#!/bin/sh
# Prints, one per line, "NAME<TAB>ASSIGNMENTS" for each BLAS this machine can give PyTorch,
# where ASSIGNMENTS (VAR=value words separated by spaces, no spaces inside) make
# /usr/bin/python3's torch use it, e.g.
#   bench/peers/blas_variants.sh | while IFS="$(printf '\t')" read -r name assign; do
#     env $assign /usr/bin/python3 bench/peers/torch_bench.py --only model --models gpt2 ...
#   done
# Debian 12: torch's libtorch_cpu.so needs libblas.so.3 (the alternatives link picks OpenBLAS);
# LD_LIBRARY_PATH pointing at a BLAS's own folder makes the loader take that libblas.so.3
# instead. oneDNN has no Fortran BLAS of its own: libsgemm_onednn.so (sgemm_onednn.c, built
# here into BUILD_DIR when missing and libdnnl-dev is installed) is LD_PRELOADed to route
# sgemm_ to dnnl_sgemm.
# Usage: blas_variants.sh [BUILD_DIR]   (default: bench/peers/build beside this script)
set -e
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/build}
lib=/usr/lib/x86_64-linux-gnu
tab=$(printf '\t')
# BLIS 0.9 (Debian 12) does not know newer CPUs (e.g. AMD family 26 / Zen 5) and then
# selects its 'generic' reference kernels (about 1/4 of the speed): in that case force the
# best sub-configuration the CPU can run with BLIS_ARCH_TYPE (an integer id, looked up by name
# with bli_arch_string): skx with AVX-512F/DQ/BW/VL, else zen3 (AMD) / haswell (Intel) with AVX2+FMA.
blis_arch() {  # $1 = libblis.so path; prints " BLIS_ARCH_TYPE=N" or nothing
  /usr/bin/python3 - "$1" <<'PY' 2>/dev/null || true
import ctypes, sys
l = ctypes.CDLL(sys.argv[1])
l.bli_arch_string.restype = ctypes.c_char_p
names = {l.bli_arch_string(i).decode(): i for i in range(64) if l.bli_arch_string(i)}
if l.bli_arch_string(l.bli_arch_query_id()).decode() != "generic":
    sys.exit(0)
flags = set()
for line in open("/proc/cpuinfo"):
    if line.startswith("flags"):
        flags = set(line.split(":", 1)[1].split())
        break
amd = "AuthenticAMD" in open("/proc/cpuinfo").read()
if {"avx512f", "avx512dq", "avx512bw", "avx512vl"} <= flags and "skx" in names:
    want = "skx"
elif {"avx2", "fma"} <= flags:
    want = "zen3" if amd and "zen3" in names else "haswell"
else:
    sys.exit(0)
print(f" BLIS_ARCH_TYPE={names[want]}", end="")
PY
}
for v in openblas-pthread openblas-openmp openblas-serial blis-pthread blis-openmp blis-serial; do
  if [ -e "$lib/$v/libblas.so.3" ]; then
    extra=""
    case $v in blis-*) [ -e "$lib/$v/libblis.so.4" ] && extra=$(blis_arch "$lib/$v/libblis.so.4") ;; esac
    echo "$v${tab}LD_LIBRARY_PATH=$lib/$v$extra"
  fi
done
if [ -e /usr/include/dnnl.h ] && [ -e "$lib/libdnnl.so" ]; then
  so=$build/libsgemm_onednn.so
  if [ ! -e "$so" ] || [ "$here/sgemm_onednn.c" -nt "$so" ]; then
    mkdir -p "$build"
    cc -O2 -shared -fPIC "$here/sgemm_onednn.c" -o "$so" -ldnnl -ldl >&2
  fi
  echo "onednn${tab}LD_PRELOAD=$so"
fi
