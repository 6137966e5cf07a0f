// The machine's own limits: fp32 FMA peak and memory bandwidth.
//
//   bench "peak":  12 independent FMA chains on ymm (AVX2+FMA, 8 floats) and, when the CPU
//                  has AVX-512F (checked at run time), on zmm (16 floats); 1 thread and N
//                  threads (std::thread, one chain set per thread). FLOPs = 2 per lane per FMA.
//   bench "triad": a[i] = b[i] + s*c[i] over three arrays of --mib MiB (256 by default).
//                  "gbs" counts 3 x 4 bytes per element (STREAM convention: read b, c, write a);
//                  "gbs_wa" counts 4 x 4 bytes (the write-allocate read of a that the hardware
//                  really does with ordinary stores).
//   bench "read":  sum of one --mib MiB array (read-only bandwidth: the roof for M=1 decode).
//
// Build: c++ -O3 -march=native -std=c++17 -pthread peak.cpp -o peak
#include <immintrin.h>

#include <atomic>
#include <cmath>
#include <thread>

#include "common.h"

using namespace peers;

static const char* kUsage =
    "usage: peak [--threads 1,2] [--only peak,triad,read] [--runs N] [--mib 256] [--quick]\n"
    "  --threads  thread counts to measure (default: 1 and all cores)\n"
    "  --only     subset of benches (default: peak,triad,read)\n"
    "  --runs     timed runs per measurement after one warm-up (default 7; --quick: 5)\n"
    "  --mib      MiB per array for triad/read (default 256; --quick: 64)\n";

// ---------------------------------------------------------------- FMA peak
// Each iteration: 12 independent FMAs acc_j = acc_j * m + c. With m just below 1 the chains
// converge to c/(1-m): no overflow, no denormals.
__attribute__((target("avx2,fma"), noinline)) static float fma_ymm(long iters) {
  __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
  __m256 a0 = _mm256_set1_ps(1.0f), a1 = _mm256_set1_ps(1.1f), a2 = _mm256_set1_ps(1.2f),
         a3 = _mm256_set1_ps(1.3f), a4 = _mm256_set1_ps(1.4f), a5 = _mm256_set1_ps(1.5f),
         a6 = _mm256_set1_ps(1.6f), a7 = _mm256_set1_ps(1.7f), a8 = _mm256_set1_ps(1.8f),
         a9 = _mm256_set1_ps(1.9f), a10 = _mm256_set1_ps(2.0f), a11 = _mm256_set1_ps(2.1f);
  for (long i = 0; i < iters; ++i) {
    a0 = _mm256_fmadd_ps(a0, m, c);
    a1 = _mm256_fmadd_ps(a1, m, c);
    a2 = _mm256_fmadd_ps(a2, m, c);
    a3 = _mm256_fmadd_ps(a3, m, c);
    a4 = _mm256_fmadd_ps(a4, m, c);
    a5 = _mm256_fmadd_ps(a5, m, c);
    a6 = _mm256_fmadd_ps(a6, m, c);
    a7 = _mm256_fmadd_ps(a7, m, c);
    a8 = _mm256_fmadd_ps(a8, m, c);
    a9 = _mm256_fmadd_ps(a9, m, c);
    a10 = _mm256_fmadd_ps(a10, m, c);
    a11 = _mm256_fmadd_ps(a11, m, c);
    // Keep the compiler from reassociating / folding the chains.
    __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5));
    __asm__ volatile("" : "+x"(a6), "+x"(a7), "+x"(a8), "+x"(a9), "+x"(a10), "+x"(a11));
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                           _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
  s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[7];
}

__attribute__((target("avx512f"), noinline)) static float fma_zmm(long iters) {
  __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
  __m512 a0 = _mm512_set1_ps(1.0f), a1 = _mm512_set1_ps(1.1f), a2 = _mm512_set1_ps(1.2f),
         a3 = _mm512_set1_ps(1.3f), a4 = _mm512_set1_ps(1.4f), a5 = _mm512_set1_ps(1.5f),
         a6 = _mm512_set1_ps(1.6f), a7 = _mm512_set1_ps(1.7f), a8 = _mm512_set1_ps(1.8f),
         a9 = _mm512_set1_ps(1.9f), a10 = _mm512_set1_ps(2.0f), a11 = _mm512_set1_ps(2.1f);
  for (long i = 0; i < iters; ++i) {
    a0 = _mm512_fmadd_ps(a0, m, c);
    a1 = _mm512_fmadd_ps(a1, m, c);
    a2 = _mm512_fmadd_ps(a2, m, c);
    a3 = _mm512_fmadd_ps(a3, m, c);
    a4 = _mm512_fmadd_ps(a4, m, c);
    a5 = _mm512_fmadd_ps(a5, m, c);
    a6 = _mm512_fmadd_ps(a6, m, c);
    a7 = _mm512_fmadd_ps(a7, m, c);
    a8 = _mm512_fmadd_ps(a8, m, c);
    a9 = _mm512_fmadd_ps(a9, m, c);
    a10 = _mm512_fmadd_ps(a10, m, c);
    a11 = _mm512_fmadd_ps(a11, m, c);
    __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5));
    __asm__ volatile("" : "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));
  }
  __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                           _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
  s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
  float out[16];
  _mm512_storeu_ps(out, s);
  return out[0] + out[15];
}

static volatile float g_sink;

// Runs body(t) on `threads` threads released together; returns wall milliseconds from the
// release to the last thread's finish.
template <class F>
static double run_parallel(int threads, F body) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  double t_end_max = 0;
  std::vector<double> t_end(threads, 0.0);
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      body(t);
      t_end[t] = now_ms();
    });
  while (ready.load() < threads) {
  }
  double t0 = now_ms();
  go.store(true, std::memory_order_release);
  for (auto& th : pool) th.join();
  for (double e : t_end) t_end_max = std::max(t_end_max, e);
  return t_end_max - t0;
}

static Stats measure_parallel(int threads, int runs, const std::function<void(int)>& body) {
  run_parallel(threads, body);  // warm-up
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) t.push_back(run_parallel(threads, body));
  return summarize(t);
}

static void bench_peak(int threads, int runs, bool quick) {
  struct Variant {
    const char* impl;
    int lanes;
    float (*fn)(long);
    bool ok;
  };
  std::vector<Variant> vs = {{"fma_avx2_ymm_12chains", 8, fma_ymm,
                              (bool)__builtin_cpu_supports("avx2") && (bool)__builtin_cpu_supports("fma")},
                             {"fma_avx512_zmm_12chains", 16, fma_zmm,
                              (bool)__builtin_cpu_supports("avx512f")}};
  for (auto& v : vs) {
    if (!v.ok) {
      JsonLine().str("bench", "peak").str("impl", v.impl).integer("threads", threads)
          .str("skipped", "cpu lacks the ISA").print();
      continue;
    }
    // Calibrate iterations so one run takes ~100 ms (30 ms with --quick) on one thread.
    long iters = 1 << 23;
    double t0 = now_ms();
    g_sink = v.fn(iters);
    double dt = now_ms() - t0;
    iters = (long)(iters * ((quick ? 30.0 : 100.0) / std::max(dt, 1e-3)));
    Stats s = measure_parallel(threads, runs, [&](int) { g_sink = v.fn(iters); });
    double flop = 2.0 * v.lanes * 12.0 * (double)iters * threads;
    JsonLine()
        .str("bench", "peak")
        .str("impl", v.impl)
        .integer("threads", threads)
        .integer("iters_per_thread", iters)
        .stats(s)
        .num("gflops", flop / (s.median * 1e6))
        .num("gflops_best", flop / (s.min * 1e6))
        .print();
  }
}

// ---------------------------------------------------------------- bandwidth
static void bench_bw(const std::vector<std::string>& which, const std::vector<int>& thread_list,
                     int runs, size_t mib) {
  size_t n = mib * (size_t)1024 * 1024 / sizeof(float);
  float* a = (float*)aligned_alloc(64, n * sizeof(float));
  float* b = (float*)aligned_alloc(64, n * sizeof(float));
  float* c = (float*)aligned_alloc(64, n * sizeof(float));
  int maxt = *std::max_element(thread_list.begin(), thread_list.end());
  // First touch by all threads (one NUMA node here, but keeps it right elsewhere).
  run_parallel(maxt, [&](int t) {
    size_t lo = n * t / maxt, hi = n * (t + 1) / maxt;
    for (size_t i = lo; i < hi; ++i) {
      a[i] = 0.f;
      b[i] = 1.f + (float)(i & 7);
      c[i] = 0.5f;
    }
  });
  const float scalar = 3.0f;
  std::vector<double> partial(64 * 16, 0.0);
  for (int threads : thread_list) {
    for (const auto& w : which) {
      if (w == "triad") {
        Stats s = measure_parallel(threads, runs, [&](int t) {
          size_t lo = n * t / threads, hi = n * (t + 1) / threads;
          float* __restrict__ A = a;
          const float* __restrict__ B = b;
          const float* __restrict__ C = c;
          for (size_t i = lo; i < hi; ++i) A[i] = B[i] + scalar * C[i];
        });
        double bytes3 = 3.0 * 4.0 * (double)n, bytes4 = 4.0 * 4.0 * (double)n;
        JsonLine()
            .str("bench", "triad")
            .str("impl", "c_loop_autovec")
            .integer("threads", threads)
            .integer("mib_per_array", (long long)mib)
            .stats(s)
            .num("gbs", bytes3 / (s.median * 1e6))
            .num("gbs_wa", bytes4 / (s.median * 1e6))
            .num("gbs_best", bytes3 / (s.min * 1e6))
            .str("bytes_counted", "gbs: 12 B/element (read b,c + write a); gbs_wa: 16 B/element incl. write-allocate of a")
            .print();
      } else if (w == "read") {
        Stats s = measure_parallel(threads, runs, [&](int t) {
          size_t lo = n * t / threads, hi = n * (t + 1) / threads;
          // 8 partial sums so the reduction vectorises without -ffast-math.
          float acc[16] = {0};
          size_t i = lo;
          for (; i + 16 <= hi; i += 16)
            for (int j = 0; j < 16; ++j) acc[j] += b[i + j];
          float tot = 0;
          for (; i < hi; ++i) tot += b[i];
          for (int j = 0; j < 16; ++j) tot += acc[j];
          partial[t * 16] = tot;
        });
        double bytes = 4.0 * (double)n;
        JsonLine()
            .str("bench", "read")
            .str("impl", "c_sum_autovec")
            .integer("threads", threads)
            .integer("mib_per_array", (long long)mib)
            .stats(s)
            .num("gbs", bytes / (s.median * 1e6))
            .num("gbs_best", bytes / (s.min * 1e6))
            .print();
      }
    }
  }
  g_sink = a[n / 2] + (float)partial[0];
  free(a);
  free(b);
  free(c);
}

int main(int argc, char** argv) {
  Args args(argc, argv, kUsage);
  bool quick = args.has("quick");
  int ncpu = (int)std::thread::hardware_concurrency();
  std::vector<int> threads = args.get_ints("threads", ncpu > 1 ? std::vector<int>{1, ncpu} : std::vector<int>{1});
  int runs = std::max(5, args.get_int("runs", quick ? 5 : 7));
  size_t mib = (size_t)args.get_int("mib", quick ? 64 : 256);
  auto only = args.get_strs("only", {"peak", "triad", "read"});
  auto want = [&](const char* b) { return std::find(only.begin(), only.end(), b) != only.end(); };
  if (want("peak"))
    for (int t : threads) bench_peak(t, runs, quick);
  std::vector<std::string> bw;
  if (want("triad")) bw.push_back("triad");
  if (want("read")) bw.push_back("read");
  if (!bw.empty()) bench_bw(bw, threads, runs, mib);
  return 0;
}
