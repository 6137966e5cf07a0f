// Shared helpers for the peer benchmarks (peak.cpp, blas_bench.cpp): timing, statistics,
// JSON lines, and a tiny command-line parser. Header-only on purpose: each program builds
// with one plain `c++ -O3 -march=native` command (see README.md).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace peers {

inline double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

struct Stats {
  std::vector<double> runs;  // milliseconds, in the order measured
  double median = 0, min = 0, max = 0;
};

inline Stats summarize(std::vector<double> runs) {
  Stats s;
  s.runs = runs;
  std::sort(runs.begin(), runs.end());
  size_t n = runs.size();
  s.min = runs.front();
  s.max = runs.back();
  s.median = n % 2 ? runs[n / 2] : 0.5 * (runs[n / 2 - 1] + runs[n / 2]);
  return s;
}

// Runs `fn` `warmup` times untimed, then `runs` times timed (each call timed on its own).
inline Stats measure(const std::function<void()>& fn, int warmup, int runs) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> t;
  t.reserve(runs);
  for (int i = 0; i < runs; ++i) {
    double t0 = now_ms();
    fn();
    t.push_back(now_ms() - t0);
  }
  return summarize(t);
}

// Number of timed repetitions so that one measurement lasts about `target_ms`
// (for very short kernels each "run" is then the mean of `reps` calls).
inline int reps_for(const std::function<void()>& fn, double target_ms) {
  double t0 = now_ms();
  fn();
  double dt = now_ms() - t0;
  if (dt <= 0) dt = 1e-3;
  int r = (int)(target_ms / dt);
  return std::max(1, std::min(r, 100000));
}

// Times a short `fn`: each of `runs` measurements calls it `reps` times in a
// row (reps_for `target_ms`, after one untimed warm-up run) and the figures
// are per call. `reps` is set for the caller to report.
inline Stats measure_per_call(const std::function<void()>& fn, double target_ms, int runs,
                              int& reps) {
  reps = reps_for(fn, target_ms);
  const int n = reps;
  Stats s = measure(
      [&] {
        for (int r = 0; r < n; ++r) fn();
      },
      1, runs);
  for (auto& r : s.runs) r /= n;
  s.median /= n;
  s.min /= n;
  s.max /= n;
  return s;
}

// One JSON line: caller passes the leading fields (already JSON-encoded "key": value pairs)
// and derived fields computed from the median time.
class JsonLine {
 public:
  JsonLine& str(const char* k, const std::string& v) {
    add(k, "\"" + v + "\"");
    return *this;
  }
  JsonLine& num(const char* k, double v) {
    char b[64];
    snprintf(b, sizeof b, "%.6g", v);
    add(k, b);
    return *this;
  }
  JsonLine& integer(const char* k, long long v) {
    add(k, std::to_string(v));
    return *this;
  }
  JsonLine& boolean(const char* k, bool v) {
    add(k, v ? "true" : "false");
    return *this;
  }
  JsonLine& stats(const Stats& s) {
    std::string r = "[";
    for (size_t i = 0; i < s.runs.size(); ++i) {
      char b[64];
      snprintf(b, sizeof b, "%s%.4f", i ? ", " : "", s.runs[i]);
      r += b;
    }
    r += "]";
    add("runs_ms", r);
    integer("runs", (long long)s.runs.size());
    num("median_ms", s.median);
    num("min_ms", s.min);
    num("max_ms", s.max);
    return *this;
  }
  void print() const {
    printf("{%s}\n", body_.c_str());
    fflush(stdout);
  }

 private:
  void add(const char* k, const std::string& v) {
    if (!body_.empty()) body_ += ", ";
    body_ += "\"";
    body_ += k;
    body_ += "\": ";
    body_ += v;
  }
  std::string body_;
};

// --key value / --flag parser.
struct Args {
  std::map<std::string, std::string> kv;
  Args(int argc, char** argv, const char* usage) {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "-h" || a == "--help") {
        fputs(usage, stdout);
        exit(0);
      }
      if (a.rfind("--", 0) != 0) {
        fprintf(stderr, "unexpected argument %s\n%s", a.c_str(), usage);
        exit(2);
      }
      a = a.substr(2);
      size_t eq = a.find('=');
      if (eq != std::string::npos) {
        kv[a.substr(0, eq)] = a.substr(eq + 1);
      } else if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) {
        kv[a] = argv[++i];
      } else {
        kv[a] = "1";
      }
    }
  }
  bool has(const std::string& k) const { return kv.count(k) > 0; }
  std::string get(const std::string& k, const std::string& d) const {
    auto it = kv.find(k);
    return it == kv.end() ? d : it->second;
  }
  int get_int(const std::string& k, int d) const { return has(k) ? atoi(kv.at(k).c_str()) : d; }
  std::vector<int> get_ints(const std::string& k, std::vector<int> d) const {
    if (!has(k)) return d;
    std::vector<int> r;
    std::stringstream ss(kv.at(k));
    std::string item;
    while (std::getline(ss, item, ',')) r.push_back(atoi(item.c_str()));
    return r;
  }
  std::vector<std::string> get_strs(const std::string& k, std::vector<std::string> d) const {
    if (!has(k)) return d;
    std::vector<std::string> r;
    std::stringstream ss(kv.at(k));
    std::string item;
    while (std::getline(ss, item, ',')) r.push_back(item);
    return r;
  }
};

}  // namespace peers
