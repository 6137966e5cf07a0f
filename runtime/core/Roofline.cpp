//===- Roofline.cpp - What a kernel could reach on this machine ------------===//

#include "runtime/core/Roofline.h"

#include <algorithm>

namespace tfmc::runtime {

std::optional<KernelWork> linearWork(const std::string &op,
                                     const std::string &activations,
                                     const std::vector<ArgExtents> &args,
                                     int64_t depth) {
  const bool gated = op == "tfm.gated_linear";
  if ((op != "tfm.linear" && !gated) || activations == "bf16" ||
      args.size() < 3 || args.front().extents.empty() ||
      args.back().extents.empty())
    return std::nullopt;
  for (const ArgExtents &arg : args)
    for (int64_t extent : arg.extents)
      if (extent < 0)
        return std::nullopt; // a symbol without a value
  const double k = double(depth > 0 ? depth : args.front().extents.front());
  const double width = double(args.back().extents.front());
  double rows = 1;
  for (std::size_t d = 1; d < args.back().extents.size(); ++d)
    rows *= double(args.back().extents[d]);
  KernelWork work;
  work.ops = 2 * rows * width * k * (gated ? 2 : 1);
  for (const ArgExtents &arg : args) {
    double elements = 1;
    for (int64_t extent : arg.extents)
      elements *= double(extent);
    work.bytes += elements * double(elementTypeSize(arg.type));
  }
  work.integer = activations == "int8";
  return work;
}

RoofFraction roofFraction(const KernelWork &work, double seconds,
                          const MachineRoof &machine) {
  RoofFraction result;
  const double peak =
      work.integer ? machine.int8OpsPerSecond : machine.f32OpsPerSecond;
  if (seconds <= 0 || work.bytes <= 0 || peak <= 0 ||
      machine.readBytesPerSecond <= 0)
    return result;
  const double streamed = machine.readBytesPerSecond * work.ops / work.bytes;
  result.memoryBound = streamed < peak;
  result.fraction = work.ops / seconds / std::min(peak, streamed);
  return result;
}

} // namespace tfmc::runtime
