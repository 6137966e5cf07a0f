//===- Compile.cpp - The kernel registry and Halide's compiler ------------===//

#include "compiler/codegen/kernels/Common.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <unistd.h>

#ifndef TFMC_ADAMS2019_PLUGIN
#error "TFMC_ADAMS2019_PLUGIN must be defined by the build"
#endif

namespace Halide::Internal {
// Exported by libHalide (PrintLoopNest.h), not declared by Halide.h.
std::string print_loop_nest(const std::vector<Function> &outputs);
} // namespace Halide::Internal

namespace tfmc::codegen {

using namespace Halide;

namespace {
/// Kernel kind -> definition, filled by the kernel files' registrations
/// during static initialisation (tfmc_kernels is linked whole).
std::map<KernelKind, KernelDefinition> &registry() {
  static std::map<KernelKind, KernelDefinition> definitions;
  return definitions;
}
} // namespace

KernelRegistration::KernelRegistration(std::initializer_list<KernelKind> kinds,
                                       KernelDefinition definition) {
  // A second file registering a kind would be silently ignored by emplace;
  // it is a bug in the kernel files, reported at start-up.
  for (KernelKind kind : kinds)
    if (!registry().emplace(kind, definition).second)
      llvm::report_fatal_error(
          llvm::Twine("tfmc: kernel kind ") +
          llvm::Twine(static_cast<int>(kind)) +
          " is registered by two kernel files (compiler/codegen/kernels)");
}

const KernelDefinition *kernelDefinition(KernelKind kind) {
  auto it = registry().find(kind);
  return it == registry().end() ? nullptr : &it->second;
}

/// The definition of `spec`'s kind; a kind no file registered is a bug in
/// tfmc itself (Lowering only makes specs of kinds it knows).
static const KernelDefinition &definitionOf(const KernelSpec &spec) {
  const KernelDefinition *definition = kernelDefinition(spec.kind);
  if (!definition)
    throw CompileError("no kernel file registers kernel kind " +
                       std::to_string(int(spec.kind)));
  return *definition;
}

BuiltKernel buildKernel(const KernelSpec &spec) {
  const KernelDefinition &definition = definitionOf(spec);
  if (spec.gpu())
    return definition.gpu(spec);
  BuiltKernel kernel = definition.algorithm(spec);
  if (!spec.autoschedule)
    definition.cpuSchedule(kernel, spec);
  return kernel;
}

BuiltKernel buildGpuOnHost(const KernelSpec &spec) {
  kernels::GpuEmulation emulation(true);
  return definitionOf(spec).gpu(spec);
}

namespace {

/// Adams2019 splits loops by factors chosen for its estimates (the
/// compiled batch and sequence bounds) and ends them with ShiftInwards or
/// RoundUp tails, which compute a whole factor even where the loop is
/// shorter: a program built for 48 positions, run on 3, computed its
/// output rows from -45 ("Output buffer layer_norm$1 is accessed at -45")
/// and would read its inputs there. Every run has its own shorter extents
/// (a decode step has one row per sequence), so each such split is guarded
/// instead: the loops Adams2019 chose, with their tails cut at the extent.
void guardSplitTails(const Func &output) {
  // Definitions and schedules are shared handles: editing a copy edits
  // the pipeline's.
  auto guard = [](Internal::StageSchedule schedule) {
    for (Internal::Split &split : schedule.splits())
      if (split.split_type == Internal::Split::SplitVar &&
          (split.tail == TailStrategy::ShiftInwards ||
           split.tail == TailStrategy::RoundUp))
        split.tail = TailStrategy::GuardWithIf;
  };
  for (auto &[name, function] :
       Internal::build_environment({output.function()})) {
    guard(function.definition().schedule());
    for (Internal::Definition update : function.updates())
      guard(update.schedule());
  }
}

/// The pipeline ready to lower: with tfmc's schedule, or estimates set and
/// Adams2019's schedule applied.
std::pair<Pipeline, std::vector<Argument>>
lowerable(const KernelSpec &spec, const target::TargetDescription &target) {
  BuiltKernel kernel = buildKernel(spec);
  std::vector<Argument> arguments(kernel.arguments.begin(),
                                  kernel.arguments.end());
  Pipeline pipeline(kernel.output);
  if (spec.gpu())
    kernels::addLaneBarrierPass(pipeline);
  if (!spec.autoschedule)
    return {pipeline, arguments};
  if (spec.estimates.size() != kernel.arguments.size() + 1)
    throw CompileError("the autoscheduler needs an estimate per buffer");
  for (size_t i = 0; i < kernel.arguments.size(); ++i) {
    ImageParam &param = kernel.arguments[i];
    for (int d = 0; d < param.dimensions(); ++d)
      param.dim(d).set_estimate(0, int(spec.estimates[i][d]));
  }
  Region region;
  for (int64_t extent : spec.estimates.back())
    region.push_back(Range(0, int(extent)));
  kernel.output.set_estimates(region);
  static const bool loaded = [] {
    load_plugin(TFMC_ADAMS2019_PLUGIN);
    // Adams2019 (Halide 14) may unroll a loop whose extent its estimates
    // make small but that is not constant: the keys of an attention, whose
    // count is the sequence's (`Loop over dot.s1.kk.kk has extent
    // ((k.extent.2 + 7)/8)`, at 8 lanes). Halide then refuses the whole
    // schedule. HL_PERMIT_FAILED_UNROLL keeps such a loop serial (Halide
    // warns) and the rest of Adams2019's schedule as it chose it.
    ::setenv("HL_PERMIT_FAILED_UNROLL", "1", /*overwrite=*/0);
    return true;
  }();
  (void)loaded;
  pipeline.auto_schedule("Adams2019",
                         Target(target.halideKernelTarget(spec.bf16Products)),
                         MachineParams(/*parallelism=*/int(target.cores),
                                       /*last_level_cache_size=*/target.l3Bytes,
                                       /*balance=*/40));
  guardSplitTails(kernel.output);
  return {pipeline, arguments};
}

/// LLVM options for the code Halide generates, set before Halide first
/// initialises LLVM (it reads HL_LLVM_ARGS once per process; a user's own
/// HL_LLVM_ARGS wins). The SLP vectorizer packs the GEMM micro-kernel's
/// 64-bit row addresses into vector registers (vpbroadcastq, vpaddq,
/// vmovq, vpextrq: about 8 extra vector uops per 20 FMAs, on the ports the
/// FMAs use); without it the inner loop is only loads and FMAs. Measured on
/// GPT-2 small's forward (128 tokens, 2 threads): 0.89x the CPU time; the
/// kernels' results are the same (SLP packs identical operations, it never
/// reorders floating-point arithmetic).
void configureLlvm() {
  static const bool configured = [] {
    ::setenv("HL_LLVM_ARGS", "-slp-threshold=1000", /*overwrite=*/0);
    return true;
  }();
  (void)configured;
}

std::string oneLine(std::string text) {
  for (char &c : text)
    if (c == '\n')
      c = ' ';
  return text;
}

/// The loop nest of a GPU kernel (gpu_block and gpu_thread loops, what is
/// computed where): the lowered statement of a GPU pipeline shows only the
/// host side and the PTX.
std::string gpuLoopNest(const Pipeline &pipeline) {
  std::vector<Internal::Function> outputs;
  for (const Func &output : pipeline.outputs())
    outputs.push_back(output.function());
  return Internal::print_loop_nest(outputs);
}

} // namespace

bool compileKernel(const KernelSpec &spec, const std::string &name,
                   const target::TargetDescription &target,
                   const std::string &objectPath, std::string &error) {
  configureLlvm();
  Target halideTarget(target.halideKernelTarget(spec.bf16Products));
  try {
    try {
      auto [pipeline, arguments] = lowerable(spec, target);
      pipeline.compile_to_object(objectPath, arguments, name, halideTarget);
    } catch (const Halide::Error &e) {
      if (!spec.autoschedule)
        throw;
      // A benchmark peer that cannot schedule a kernel leaves that kernel
      // to the tile plan, so the others can still be compared.
      std::fprintf(stderr,
                   "tfmc: warning: Adams2019 cannot schedule kernel %s (%s); "
                   "it uses its tile plan\n",
                   name.c_str(), oneLine(e.what()).c_str());
      KernelSpec planned = spec;
      planned.autoschedule = false;
      auto [pipeline, arguments] = lowerable(planned, target);
      pipeline.compile_to_object(objectPath, arguments, name, halideTarget);
    }
    return true;
  } catch (const Halide::Error &e) {
    error = oneLine("Halide failed to compile kernel " + name + ": " + e.what());
    return false;
  }
}

bool compileRuntime(const target::TargetDescription &target,
                    const std::string &objectPath, std::string &error) {
  configureLlvm();
  try {
    compile_standalone_runtime(objectPath, Target(target.halideTarget));
    return true;
  } catch (const Halide::Error &e) {
    error = oneLine(std::string("Halide failed to compile its runtime: ") +
                    e.what());
    return false;
  }
}

std::string describeKernel(const KernelSpec &spec,
                           const target::TargetDescription &target) {
  configureLlvm();
  auto [pipeline, arguments] = lowerable(spec, target);
  std::string loopNest;
  if (spec.gpu())
    loopNest = "// loop nest\n" + gpuLoopNest(pipeline) + "\n";
  char path[] = "/tmp/tfmc-stmt-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return "(cannot create a temporary file for the lowered statement)\n";
  close(fd);
  pipeline.compile_to_lowered_stmt(
      path, arguments, StmtOutputFormat::Text,
      Target(target.halideKernelTarget(spec.bf16Products)));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path);
  return loopNest + text.str();
}

} // namespace tfmc::codegen
