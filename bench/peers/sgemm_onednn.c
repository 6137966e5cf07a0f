/* LD_PRELOAD shim that makes PyTorch (and anything else calling the Fortran BLAS sgemm_)
 * use oneDNN's dnnl_sgemm (Debian libdnnl-dev 2.6, OpenMP threads: torch.set_num_threads /
 * OMP_NUM_THREADS decide its thread count). Every other BLAS symbol still comes from the
 * process's libblas.so.3. Falls back to the next sgemm_ if oneDNN rejects the call.
 *
 * Build: cc -O2 -shared -fPIC sgemm_onednn.c -o libsgemm_onednn.so -ldnnl -ldl
 * Use:   LD_PRELOAD=/abs/path/libsgemm_onednn.so /usr/bin/python3 torch_bench.py ...
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <dnnl.h>

typedef void (*sgemm_fn)(const char*, const char*, const int*, const int*, const int*, const float*,
                         const float*, const int*, const float*, const int*, const float*, float*,
                         const int*);

static char tr(char c) { return (c == 'N' || c == 'n') ? 'N' : 'T'; }

void sgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k, const float* alpha,
            const float* a, const int* lda, const float* b, const int* ldb, const float* beta, float* c,
            const int* ldc) {
  /* Column-major C = op(A) op(B) is row-major C^T = op(B)^T op(A)^T: swap the operands. */
  dnnl_status_t st = dnnl_sgemm(tr(*tb), tr(*ta), *n, *m, *k, *alpha, b, *ldb, a, *lda, *beta, c, *ldc);
  if (st != dnnl_success) {
    static sgemm_fn next;
    if (!next) next = (sgemm_fn)dlsym(RTLD_NEXT, "sgemm_");
    next(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}
