// TEMPORARY stand-in (lead's local build only; replaced by wip-beam)
#ifndef TFMC_RUNTIME_BEAMSEARCH_H
#define TFMC_RUNTIME_BEAMSEARCH_H
#include <cstdint>
#include <vector>
namespace tfmc::runtime {
struct BeamOptions { int64_t numBeams = 1; double lengthPenalty = 1; bool earlyStopping = false; };
class BeamSearch {
public:
  BeamSearch(const BeamOptions &o, std::vector<int64_t>, int64_t, int64_t) : n(o.numBeams) {}
  bool step(const float *, int64_t, std::vector<int64_t> &p, std::vector<int64_t> &t) {
    p.assign(n, 0); t.assign(n, 0); return false; }
  std::vector<int64_t> best() const { return {}; }
  int64_t n;
};
}
#endif
