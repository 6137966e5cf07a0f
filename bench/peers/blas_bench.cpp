// BLAS peers for tfmc's kernels (OpenBLAS, Debian libopenblas-dev).
//
//   bench "linear":    y = x · Wᵀ as torch.nn.Linear computes it (no bias): x [M,K] row-major,
//                      W [N,K] row-major, cblas_sgemm(RowMajor, NoTrans, Trans); for M = 1 also
//                      cblas_sgemv(RowMajor, NoTrans, W, x) (OpenBLAS sgemm does not route M=1
//                      to its GEMV kernel). OpenBLAS threads: openblas_set_num_threads(T).
//   bench "attention": the unfused baseline: per head, scores = scale · Q Kᵀ by sgemm, a
//                      vectorised (AVX2 intrinsics) masked softmax with max subtraction, then
//                      sgemm with V. q, k, v are [S, H·64] as a linear produces them, output
//                      [S, H·64]. impl "openblas_unfused_qb64": query blocks of 64 rows; in the
//                      causal case each block computes scores only for keys up to its diagonal
//                      (masked key blocks are never computed) -- the fair baseline.
//                      impl "openblas_unfused_whole": one S×S score matrix per head (causal
//                      masks after computing everything; shows what blocking saves).
//                      Threads: OpenMP over (head, query block) tasks, OpenBLAS on 1 thread
//                      inside each task.
//
// Build: c++ -O3 -march=native -std=c++17 -fopenmp -I/usr/include/x86_64-linux-gnu/openblas-pthread
//          blas_bench.cpp -o blas_bench -lopenblas
#include <cblas.h>
#include <immintrin.h>
#include <omp.h>
#include <unistd.h>

#include <cmath>
#include <random>
#include <thread>

#include "common.h"

using namespace peers;

static const char* kUsage =
    "usage: blas_bench [--only linear,attention] [--threads 1,2] [--runs N] [--quick]\n"
    "  linear:    [--M 1,128,1024] [--NK 2304x768,768x768,3072x768,768x3072] [--weights warm|cold|both]\n"
    "  attention: [--sizes 128,512,1024,2048,4096] [--causal 1,0] [--heads 12]\n"
    "             [--attn-impls qb64,whole] [--no-check]\n"
    "  --runs     timed runs per measurement after warm-up (default 7; --quick: 5; min 5)\n"
    "  --quick    smoke run: M 1,128; S 128,512; fewer/shorter runs\n"
    "  --weights  cold: M=1 cycles through copies of W totalling >= 512 MiB so each call reads\n"
    "             W from DRAM as in decode; warm (default): the same W every call\n";

static volatile float g_sink;

static void settle() {
  // OpenBLAS / OpenMP worker threads spin for a while after a call: let them go to sleep
  // before the next configuration so it does not lose a core (bench/peers/README.md).
  usleep(200 * 1000);
}

static void fill_random(std::vector<float>& v, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  for (auto& x : v) x = d(rng);
}

// ------------------------------------------------------------------------------------ linear
static void bench_linear(const Args& args, const std::vector<int>& threads, int runs, bool quick) {
  std::vector<int> Ms = args.get_ints("M", quick ? std::vector<int>{1, 128} : std::vector<int>{1, 128, 1024});
  std::vector<std::string> nks =
      args.get_strs("NK", {"2304x768", "768x768", "3072x768", "768x3072"});
  std::string wmode = args.get("weights", "warm");
  double target_ms = quick ? 10.0 : 40.0;
  for (int T : threads) {
    openblas_set_num_threads(T);
    settle();
    for (const auto& nk : nks) {
      int N = atoi(nk.c_str()), K = atoi(nk.substr(nk.find('x') + 1).c_str());
      // Cold weights: enough copies of W to overflow every cache.
      size_t wbytes = (size_t)N * K * 4;
      int ncold = (int)std::max<size_t>(2, ((size_t)512 << 20) / wbytes);
      std::vector<std::vector<float>> Ws(1, std::vector<float>((size_t)N * K));
      fill_random(Ws[0], 1);
      for (int M : Ms) {
        std::vector<float> X((size_t)M * K), Y((size_t)M * N);
        fill_random(X, 2);
        std::vector<std::string> modes;
        if (M == 1 && (wmode == "cold" || wmode == "both")) modes.push_back("cold");
        if (M != 1 || wmode == "warm" || wmode == "both") modes.push_back("warm");
        for (const auto& mode : modes) {
          if (mode == "cold" && (int)Ws.size() < ncold) {
            while ((int)Ws.size() < ncold) Ws.push_back(Ws[0]);
          }
          int nw = mode == "cold" ? ncold : 1;
          std::vector<std::string> impls = {"openblas_sgemm"};
          if (M == 1) impls.push_back("openblas_sgemv");
          for (const auto& impl : impls) {
            int wi = 0;
            auto call = [&] {
              const float* W = Ws[wi].data();
              wi = (wi + 1) % nw;
              if (impl == "openblas_sgemm")
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, X.data(), K, W, K,
                            0.0f, Y.data(), N);
              else
                cblas_sgemv(CblasRowMajor, CblasNoTrans, N, K, 1.0f, W, K, X.data(), 1, 0.0f, Y.data(), 1);
            };
            for (int i = 0; i < 3; ++i) call();
            int reps = 0;
            Stats s = measure_per_call(call, target_ms, runs, reps);
            double flop = 2.0 * M * N * K;
            double bytes = 4.0 * ((double)N * K + (double)M * K + (double)M * N);
            JsonLine()
                .str("bench", "linear")
                .str("impl", impl)
                .integer("M", M)
                .integer("N", N)
                .integer("K", K)
                .integer("threads", T)
                .str("weights", mode)
                .integer("reps_per_run", reps)
                .stats(s)
                .num("gflops", flop / (s.median * 1e6))
                .num("gbs", bytes / (s.median * 1e6))
                .print();
            g_sink = Y[0];
          }
        }
        if (M == 1 && Ws.size() > 1) Ws.resize(1);
      }
    }
  }
}

// --------------------------------------------------------------------------------- attention
// Cephes-style expf on 8 lanes (rel. error ~1e-7 on the softmax range x <= 0).
__attribute__((target("avx2,fma"))) static inline __m256 exp256(__m256 x) {
  const __m256 hi = _mm256_set1_ps(88.3762626647949f), lo = _mm256_set1_ps(-88.3762626647949f);
  x = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
  __m256 fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 y = _mm256_set1_ps(1.9875691500E-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507E-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073E-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894E-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459E-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201E-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

// In place: p[0..valid) <- softmax(p[0..valid)), p[valid..width) <- 0.
__attribute__((target("avx2,fma"))) static void softmax_row(float* p, int valid, int width) {
  int j = 0;
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  for (; j + 8 <= valid; j += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(p + j));
  float mx[8];
  _mm256_storeu_ps(mx, vmax);
  float m = mx[0];
  for (int i = 1; i < 8; ++i) m = std::max(m, mx[i]);
  for (; j < valid; ++j) m = std::max(m, p[j]);
  __m256 vm = _mm256_set1_ps(m), vsum = _mm256_setzero_ps();
  j = 0;
  for (; j + 8 <= valid; j += 8) {
    __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(p + j), vm));
    _mm256_storeu_ps(p + j, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  float sm[8];
  _mm256_storeu_ps(sm, vsum);
  float sum = 0;
  for (int i = 0; i < 8; ++i) sum += sm[i];
  if (j < valid) {  // tail through the same vector exp for identical accuracy
    float tmp[8];
    int n = valid - j;
    for (int i = 0; i < 8; ++i) tmp[i] = i < n ? p[j + i] - m : -100.0f;
    _mm256_storeu_ps(tmp, exp256(_mm256_loadu_ps(tmp)));
    for (int i = 0; i < n; ++i) {
      p[j + i] = tmp[i];
      sum += tmp[i];
    }
  }
  __m256 inv = _mm256_set1_ps(1.0f / sum);
  j = 0;
  for (; j + 8 <= valid; j += 8) _mm256_storeu_ps(p + j, _mm256_mul_ps(_mm256_loadu_ps(p + j), inv));
  for (; j < valid; ++j) p[j] *= 1.0f / sum;
  for (j = valid; j < width; ++j) p[j] = 0.0f;
}

struct AttnProblem {
  int S, H, D = 64;
  bool causal;
  std::vector<float> q, k, v, o;
};

// Unfused attention; qb = query rows per task (qb >= S: whole head at once).
static void attention_unfused(AttnProblem& P, int qb, std::vector<std::vector<float>>& scratch) {
  const int S = P.S, H = P.H, D = P.D, ld = H * D;
  const float scale = 1.0f / std::sqrt((float)D);
  const int nqb = (S + qb - 1) / qb;
  const int ntask = H * nqb;
#pragma omp parallel for schedule(dynamic, 1)
  for (int t = 0; t < ntask; ++t) {
    // Largest (causal) blocks first for balance: iterate query blocks from the bottom.
    int h = t % H, b = nqb - 1 - t / H;
    int r0 = b * qb, rows = std::min(qb, S - r0);
    int keys = P.causal ? r0 + rows : S;
    float* sc = scratch[omp_get_thread_num()].data();
    const float* Q = P.q.data() + (size_t)r0 * ld + h * D;
    const float* K = P.k.data() + h * D;
    const float* V = P.v.data() + h * D;
    float* O = P.o.data() + (size_t)r0 * ld + h * D;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, keys, D, scale, Q, ld, K, ld, 0.0f, sc, keys);
    for (int i = 0; i < rows; ++i) {
      int valid = P.causal ? r0 + i + 1 : keys;
      softmax_row(sc + (size_t)i * keys, valid, keys);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, D, keys, 1.0f, sc, keys, V, ld, 0.0f, O, ld);
  }
}

static void attention_reference(const AttnProblem& P, std::vector<float>& out) {
  const int S = P.S, H = P.H, D = P.D, ld = H * D;
  out.assign((size_t)S * ld, 0.0f);
  std::vector<double> s(S);
  for (int h = 0; h < H; ++h)
    for (int i = 0; i < S; ++i) {
      int valid = P.causal ? i + 1 : S;
      double m = -1e300, sum = 0;
      for (int j = 0; j < valid; ++j) {
        double a = 0;
        for (int d = 0; d < D; ++d) a += (double)P.q[(size_t)i * ld + h * D + d] * P.k[(size_t)j * ld + h * D + d];
        s[j] = a / std::sqrt((double)D);
        m = std::max(m, s[j]);
      }
      for (int j = 0; j < valid; ++j) sum += (s[j] = std::exp(s[j] - m));
      for (int d = 0; d < D; ++d) {
        double a = 0;
        for (int j = 0; j < valid; ++j) a += s[j] * P.v[(size_t)j * ld + h * D + d];
        out[(size_t)i * ld + h * D + d] = (float)(a / sum);
      }
    }
}

static AttnProblem make_problem(int S, int H, bool causal) {
  AttnProblem P;
  P.S = S;
  P.H = H;
  P.causal = causal;
  size_t n = (size_t)S * H * P.D;
  P.q.resize(n);
  P.k.resize(n);
  P.v.resize(n);
  P.o.assign(n, 0.0f);
  fill_random(P.q, 11, 1.0f);
  fill_random(P.k, 12, 1.0f);
  fill_random(P.v, 13, 1.0f);
  return P;
}

static int impl_qb(const std::string& impl, int S) { return impl == "whole" ? S : 64; }

static bool check_attention(int H) {
  bool ok = true;
  for (bool causal : {true, false}) {
    AttnProblem P = make_problem(130, H, causal);  // odd size: exercises the partial block
    std::vector<float> ref;
    attention_reference(P, ref);
    for (std::string impl : {"qb64", "whole"}) {
      int qb = impl_qb(impl, P.S);
      std::vector<std::vector<float>> scratch(omp_get_max_threads(),
                                              std::vector<float>((size_t)std::min(qb, P.S) * P.S));
      std::fill(P.o.begin(), P.o.end(), 0.0f);
      attention_unfused(P, qb, scratch);
      double err = 0;
      for (size_t i = 0; i < ref.size(); ++i) err = std::max(err, (double)std::fabs(ref[i] - P.o[i]));
      bool pass = err < 1e-4;
      ok = ok && pass;
      JsonLine()
          .str("bench", "attention_check")
          .str("impl", "openblas_unfused_" + impl)
          .integer("S", P.S)
          .boolean("causal", causal)
          .num("max_abs_err_vs_fp64", err)
          .boolean("pass", pass)
          .print();
    }
  }
  return ok;
}

static void bench_attention(const Args& args, const std::vector<int>& threads, int runs, bool quick) {
  std::vector<int> sizes =
      args.get_ints("sizes", quick ? std::vector<int>{128, 512} : std::vector<int>{128, 512, 1024, 2048, 4096});
  std::vector<int> causals = args.get_ints("causal", {1, 0});
  std::vector<std::string> impls = args.get_strs("attn-impls", {"qb64", "whole"});
  int H = args.get_int("heads", 12);
  double target_ms = quick ? 10.0 : 40.0;
  openblas_set_num_threads(1);
  if (!args.has("no-check")) {
    omp_set_num_threads(1);
    if (!check_attention(H)) {
      fprintf(stderr, "attention check FAILED\n");
      exit(1);
    }
  }
  for (int T : threads) {
    omp_set_num_threads(T);
    settle();
    for (int S : sizes)
      for (int c : causals)
        for (const auto& impl : impls) {
          AttnProblem P = make_problem(S, H, c != 0);
          int qb = impl_qb(impl, S);
          std::vector<std::vector<float>> scratch(T, std::vector<float>((size_t)std::min(qb, S) * S));
          auto call = [&] { attention_unfused(P, qb, scratch); };
          call();
          int reps = 0;
          Stats s = measure_per_call(call, target_ms, runs, reps);
          double full_flop = 4.0 * S * (double)S * P.D * H;           // QKᵀ + PV, no mask
          double useful = c ? 0.5 * full_flop : full_flop;            // causal: half the work
          JsonLine()
              .str("bench", "attention")
              .str("impl", "openblas_unfused_" + impl)
              .integer("S", S)
              .integer("H", H)
              .integer("d_head", P.D)
              .integer("batch", 1)
              .boolean("causal", c != 0)
              .integer("threads", T)
              .str("parallel", "omp over (head, query block); openblas 1 thread per task")
              .integer("reps_per_run", reps)
              .stats(s)
              .num("gflops", useful / (s.median * 1e6))
              .num("useful_gflop", useful * 1e-9)
              .print();
          g_sink = P.o[0];
        }
  }
}

int main(int argc, char** argv) {
  Args args(argc, argv, kUsage);
  bool quick = args.has("quick");
  int ncpu = (int)std::thread::hardware_concurrency();
  std::vector<int> threads = args.get_ints("threads", ncpu > 1 ? std::vector<int>{1, 2} : std::vector<int>{1});
  int runs = std::max(5, args.get_int("runs", quick ? 5 : 7));
  auto only = args.get_strs("only", {"linear", "attention"});
  auto want = [&](const char* b) { return std::find(only.begin(), only.end(), b) != only.end(); };
  JsonLine().str("bench", "info").str("blas", openblas_get_config()).integer("cpus", ncpu).print();
  if (want("linear")) bench_linear(args, threads, runs, quick);
  if (want("attention")) bench_attention(args, threads, runs, quick);
  return 0;
}
