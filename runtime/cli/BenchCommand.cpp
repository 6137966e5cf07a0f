//===- BenchCommand.cpp - NAME bench: the model's own kernels, timed ------===//
//
//   NAME bench --weights W [--seq S] [--batch B] [--repeat N] [--warmup K]
//              [--threads N] [--entry forward|prefill|decode_step|extend]
//              [--json]
//
// Inputs are random ids (a fixed seed) and all-ones masks; each figure is
// the median, min and max over the timed runs, after warm-up runs that are
// not counted. After the runs it measures the machine (BenchMachine.h) and
// gives each linear kernel the fraction of its roof (runtime/core/
// Roofline.h) that its median reached.
//
//===----------------------------------------------------------------------===//

#include "support/Text.h"
#include "runtime/cli/BenchMachine.h"
#include "runtime/cli/Cli.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <thread>

namespace tfmc::runtime::cli {
namespace {

/// The most timed or warm-up runs a bench does (a run of the smallest model
/// takes microseconds, so this is seconds to minutes, never days).
constexpr int64_t kMaxRuns = 1'000'000;

/// What to time, from the options.
struct BenchConfig {
  std::string entryName;
  bool decode = false;
  bool extend = false; // S more tokens after a prefill of S (batch 1)
  int64_t seq = 0, batch = 0, repeat = 0, warmup = 0;
  int threads = 0; // 0: Halide's default
  bool json = false;
};

/// What was timed: one wall time per run and per step of each run.
struct BenchTimes {
  std::vector<double> totals;
  std::vector<std::vector<double>> perStep;
  int64_t repeat = 0;                  // timed runs (decode: maybe fewer)
  std::map<std::string, int64_t> bound; // symbol values, for reports
  std::string shape;                   // "batch 1 x 8 tokens", ...
};

/// Median, min and max of some timings, in milliseconds.
struct Summary {
  double median = 0, min = 0, max = 0;
};

Summary summarize(std::vector<double> seconds) {
  Summary summary;
  if (seconds.empty())
    return summary;
  std::sort(seconds.begin(), seconds.end());
  std::size_t n = seconds.size();
  double median = n % 2 ? seconds[n / 2]
                        : (seconds[n / 2 - 1] + seconds[n / 2]) / 2;
  summary.median = median * 1e3;
  summary.min = seconds.front() * 1e3;
  summary.max = seconds.back() * 1e3;
  return summary;
}

std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\')
      out += fmt::format("\\{}", static_cast<char>(c));
    else if (c < 0x20)
      out += fmt::format("\\u{:04x}", c);
    else
      out += static_cast<char>(c);
  }
  return out + "\"";
}

/// The extents of a step argument with the symbols bound, innermost first
/// (-1 for a symbol without a value, or an extent that overflows).
std::vector<int64_t> resolveDims(const Plan &plan,
                                 const std::vector<DimExpr> &dims,
                                 const std::map<std::string, int64_t> &bound) {
  std::vector<int64_t> extents;
  for (const DimExpr &dim : dims) {
    int64_t extent = 1;
    for (const DimTerm &term : dim) {
      int64_t factor = term.value;
      if (term.isSymbol) {
        auto it = bound.find(plan.symbols[term.value]);
        factor = it == bound.end() ? -1 : it->second;
      }
      if (factor < 0 || __builtin_mul_overflow(extent, factor, &extent)) {
        extent = -1;
        break;
      }
    }
    extents.push_back(extent);
  }
  return extents;
}

/// A step's argument shapes, "[a,b] [c]" (`separator` between extents).
std::string argShapes(const Plan &plan, const PlanStep &step,
                      const std::map<std::string, int64_t> &bound,
                      const char *separator, const char *between) {
  std::string text;
  for (const PlanArg &arg : step.args) {
    std::string dims;
    for (int64_t e : resolveDims(plan, arg.dims, bound))
      dims += fmt::format("{}{}", dims.empty() ? "" : separator, e);
    text += fmt::format("{}[{}]", text.empty() ? "" : between, dims);
  }
  return text;
}

BenchConfig parseConfig(const Options &options, const Plan &forwardPlan) {
  BenchConfig config;
  config.entryName =
      options.has("--entry") ? options.get("--entry") : "forward";
  if (config.entryName != "forward" && config.entryName != "prefill" &&
      config.entryName != "decode_step" && config.entryName != "extend")
    fail(fmt::format("--entry expects forward, prefill, decode_step or "
                     "extend, got {}",
                     support::quote(config.entryName)));
  config.decode = config.entryName == "decode_step";
  config.extend = config.entryName == "extend";
  const int64_t most = std::numeric_limits<int64_t>::max();
  config.seq = integerOption(options, "--seq",
                             std::min<int64_t>(128, forwardPlan.maxSeq), 1,
                             most);
  config.batch = integerOption(options, "--batch", 1, 1, most);
  config.repeat = integerOption(options, "--repeat", 10, 1, kMaxRuns);
  config.warmup = integerOption(options, "--warmup", 2, 0, kMaxRuns);
  config.json = options.has("--json");
  if (config.seq > forwardPlan.maxSeq)
    fail(fmt::format("--seq {} is more than the compiled max seq {}",
                     config.seq, forwardPlan.maxSeq));
  if (config.batch > forwardPlan.maxBatch)
    fail(fmt::format("--batch {} is more than the compiled max batch {} "
                     "(tfmc --max-batch {})",
                     config.batch, forwardPlan.maxBatch, config.batch));
  // For the report only; applyThreads checks and applies it.
  if (options.has("--threads"))
    if (std::optional<int64_t> threads = parseInteger(options.get("--threads"));
        threads && *threads >= 1 && *threads <= 1024)
      config.threads = static_cast<int>(*threads);
  return config;
}

/// Runs an entry point over random inputs and records its times.
class BenchRunner {
public:
  BenchRunner(Model &model, const BenchConfig &config)
      : model_(model), config_(config) {
    for (const PlanInput &input : model.plan().inputs)
      encoderDecoder_ |= input.name == "decoder_input_ids";
  }

  /// A forward or prefill: K warm-up runs, N timed runs of [B, S].
  BenchTimes timeWhole(const Plan &timed) {
    BenchTimes times;
    times.perStep.resize(timed.steps.size());
    std::vector<InputView> inputs = inputsFor(timed, config_.batch);
    for (int64_t i = 0; i < config_.warmup; ++i)
      runOnce(timed, inputs, nullptr);
    for (int64_t i = 0; i < config_.repeat; ++i)
      runOnce(timed, inputs, &times);
    times.repeat = config_.repeat;
    int64_t seq = config_.seq;
    times.bound = {{"B", config_.batch}, {"S", seq}, {"T", seq}, {"P", 0},
                   {"L", seq}};
    times.shape = fmt::format("batch {} x {} tokens", config_.batch, seq);
    return times;
  }

  /// Decode steps after a prefill of S tokens (an encoder-decoder: the
  /// source and one start token), as `generate` feeds them.
  BenchTimes timeDecode(const Plan &timed) {
    const Plan &forwardPlan = model_.plan();
    const Plan *prefillPlan = model_.entry("prefill");
    if (!prefillPlan)
      fail(fmt::format("model '{}' has no prefill entry point",
                       forwardPlan.model));
    // The decoder's rows after the prefill: the prompt, or the start token.
    const int64_t start = encoderDecoder_ ? 1 : config_.seq;
    if (start + 1 > forwardPlan.maxLen)
      fail(fmt::format("--seq {} leaves no room for a decode step (max_len "
                       "{})",
                       config_.seq, forwardPlan.maxLen));
    // Each step appends a row: stop before max_len.
    int64_t room = forwardPlan.maxLen - start;
    int64_t repeat = config_.repeat;
    if (repeat > room) {
      std::fprintf(stderr,
                   "bench: %lld decode steps after %lld rows reach max_len "
                   "%lld: timing %lld\n",
                   static_cast<long long>(repeat),
                   static_cast<long long>(start),
                   static_cast<long long>(forwardPlan.maxLen),
                   static_cast<long long>(room));
      repeat = room;
    }
    BenchTimes times;
    times.perStep.resize(timed.steps.size());
    std::vector<InputView> prefillInputs =
        inputsFor(*prefillPlan, config_.batch);
    auto decodeSteps = [&](int64_t steps, BenchTimes *record) {
      runOnce(*prefillPlan, prefillInputs, nullptr);
      for (int64_t i = 0; i < steps; ++i) {
        std::vector<InputView> stepInputs = inputsFor(timed, config_.batch);
        runOnce(timed, stepInputs, record);
      }
    };
    // Warm-up steps from a prefill, then a fresh prefill for the timed
    // ones, so that they cover decoder rows start .. start + N - 1.
    decodeSteps(std::min(config_.warmup, room), nullptr);
    decodeSteps(repeat, &times);
    times.repeat = repeat;
    int64_t past = start + repeat - 1;
    times.bound = {{"B", config_.batch},
                   {"S", encoderDecoder_ ? config_.seq : 1},
                   {"T", 1},
                   {"P", past},
                   {"L", past + 1}};
    times.shape = fmt::format(
        "{} decode steps after {} {}", repeat, start,
        encoderDecoder_
            ? "decoder row (source " + std::to_string(config_.seq) + ")"
            : "prompt tokens");
    return times;
  }

  /// Extend steps of S tokens, each after an untimed prefill of S (one
  /// sequence): a prompt's second chunk, as serve runs it.
  BenchTimes timeExtend(const Plan &timed) {
    const Plan &forwardPlan = model_.plan();
    const Plan *prefillPlan = model_.entry("prefill");
    if (!prefillPlan)
      fail(fmt::format("model '{}' has no prefill entry point",
                       forwardPlan.model));
    if (config_.batch != 1)
      fail(fmt::format("--entry extend runs one sequence: --batch must be "
                       "1, got {}",
                       config_.batch));
    if (2 * config_.seq > forwardPlan.maxLen)
      fail(fmt::format("--entry extend prefills --seq {} tokens and appends "
                       "as many: more than max_len {}",
                       config_.seq, forwardPlan.maxLen));
    BenchTimes times;
    times.perStep.resize(timed.steps.size());
    std::vector<InputView> prefillInputs = inputsFor(*prefillPlan, 1);
    std::vector<InputView> extendInputs = inputsFor(timed, 1);
    for (int64_t i = 0; i < config_.warmup + config_.repeat; ++i) {
      runOnce(*prefillPlan, prefillInputs, nullptr);
      runOnce(timed, extendInputs, i < config_.warmup ? nullptr : &times);
    }
    times.repeat = config_.repeat;
    const int64_t seq = config_.seq;
    times.bound = {{"B", 1}, {"S", seq}, {"T", seq}, {"P", seq},
                   {"L", 2 * seq}};
    times.shape = fmt::format("{} tokens after {} cached", seq, seq);
    return times;
  }

private:
  /// How many tokens each input of an entry gets (0: left out): [B, S] for
  /// a forward or prefill; in a decode run the prefill takes the prompt (an
  /// encoder-decoder: the source and one start token) and each decode step
  /// one token; an extend step takes S ids (its mask and positions are the
  /// runtime's defaults).
  int64_t lengthOf(const Plan &plan, const PlanInput &input) const {
    if (plan.entry == "extend")
      return input.name == "input_ids" ? config_.seq : 0;
    if (!config_.decode)
      return config_.seq;
    bool decoderSide = input.name.rfind("decoder_", 0) == 0;
    if (plan.entry != "decode_step")
      return encoderDecoder_ && decoderSide ? 1 : config_.seq;
    if (encoderDecoder_)
      return input.name == "decoder_input_ids" ? 1
             : input.name == "attention_mask"  ? config_.seq
                                               : 0;
    return input.name == "input_ids" ? 1 : 0;
  }

  /// Random in-range ids, the same on every run of every build.
  std::vector<int64_t> randomIds(int64_t count) {
    std::vector<int64_t> ids(static_cast<std::size_t>(count));
    for (int64_t &id : ids)
      id = static_cast<int64_t>(
          splitmix64(state_) % static_cast<uint64_t>(model_.plan().vocab));
    return ids;
  }

  std::vector<InputView> inputsFor(const Plan &plan, int64_t rows) {
    std::vector<InputView> views;
    for (const PlanInput &input : plan.inputs) {
      int64_t n = lengthOf(plan, input);
      // Left out: position_ids default to each token's index (after the
      // cache's rows).
      if (n == 0 || input.kind == InputKind::Positions ||
          input.kind == InputKind::Types)
        continue;
      std::vector<int64_t> &values = storage_[plan.entry + "/" + input.name];
      values = input.kind == InputKind::Mask
                   ? std::vector<int64_t>(static_cast<std::size_t>(rows * n), 1)
                   : randomIds(rows * n);
      views.push_back({input.name, {rows, n}, values.data()});
    }
    return views;
  }

  void runOnce(const Plan &plan, const std::vector<InputView> &inputs,
               BenchTimes *record) {
    std::vector<double> stepSeconds;
    model_.setStepTimes(&stepSeconds);
    std::string error;
    auto start = std::chrono::steady_clock::now();
    std::optional<OutputView> output = model_.run(plan.entry, inputs, error);
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    model_.setStepTimes(nullptr);
    if (!output)
      fail(error);
    if (!record)
      return;
    record->totals.push_back(seconds);
    for (std::size_t s = 0; s < record->perStep.size() && s < stepSeconds.size();
         ++s)
      record->perStep[s].push_back(stepSeconds[s]);
  }

  Model &model_;
  const BenchConfig &config_;
  bool encoderDecoder_ = false;
  uint64_t state_ = 0x7466'6d63'6265'6e63ull; // "tfmcbenc"
  // Storage for every input, keyed by entry and name, that the views point
  // into.
  std::map<std::string, std::vector<int64_t>> storage_;
};

/// The timings summarized: the whole entry, each step, each op.
struct BenchReport {
  Summary total;
  double runsPerSecond = 0;
  std::vector<Summary> steps;
  /// Each step's work (linear kernels) and the fraction of its roof.
  std::vector<std::optional<KernelWork>> work;
  std::vector<RoofFraction> roof;
  MachineProbe machine;
  double kernelSum = 0;
  std::vector<std::string> opOrder;
  std::map<std::string, std::pair<int, double>> perOp;
};

BenchReport summarizeTimes(const Plan &timed, const BenchTimes &times) {
  BenchReport report;
  report.total = summarize(times.totals);
  double wallSeconds = 0;
  for (double t : times.totals)
    wallSeconds += t;
  report.runsPerSecond =
      wallSeconds > 0 ? double(times.totals.size()) / wallSeconds : 0.0;
  for (std::size_t s = 0; s < times.perStep.size(); ++s) {
    report.steps.push_back(summarize(times.perStep[s]));
    report.kernelSum += report.steps.back().median;
    std::string op = timed.steps[s].op.empty() ? "?" : timed.steps[s].op;
    if (!report.perOp.count(op))
      report.opOrder.push_back(op);
    report.perOp[op].first += 1;
    report.perOp[op].second += report.steps.back().median;
  }
  return report;
}

/// Each linear step's work at the timed shape; then, where there is any,
/// the machine's limits (on `threads`, Halide's default for 0) and each
/// such step's fraction of its roof.
void addRoofline(const Plan &timed, const BenchTimes &times, int threads,
                 BenchReport &report) {
  bool any = false, int8 = false;
  for (const PlanStep &step : timed.steps) {
    std::vector<ArgExtents> args;
    for (const PlanArg &arg : step.args)
      args.push_back({resolveDims(timed, arg.dims, times.bound), arg.type});
    report.work.push_back(linearWork(step.op, step.activations, args, step.depth));
    any = any || report.work.back().has_value();
    int8 = int8 || (report.work.back() && report.work.back()->integer);
  }
  if (!any)
    return;
  // The variant this CPU runs (a plan's own target may be `host` or a
  // fleet's list).
  std::string target = timed.target;
  for (const LinkedVariant &variant : linkedVariants())
    if (variant.chosen)
      target = variant.target;
  report.machine = measureMachine(
      target,
      threads > 0 ? threads : int(std::max(1u, std::thread::hardware_concurrency())),
      int8);
  for (std::size_t s = 0; s < report.steps.size(); ++s)
    report.roof.push_back(
        report.work[s] && report.machine.threads > 0
            ? roofFraction(*report.work[s], report.steps[s].median / 1e3,
                           report.machine.roof)
            : RoofFraction{});
}

/// "87% mem" / "64% peak", or "" for a step without a roof.
std::string roofText(const BenchReport &report, std::size_t step) {
  if (step >= report.roof.size() || report.roof[step].fraction <= 0)
    return "";
  return fmt::format("{:.0f}% {}", 100 * report.roof[step].fraction,
                     report.roof[step].memoryBound ? "mem" : "peak");
}

void printJson(const Plan &forwardPlan, const Plan &timed,
               const BenchConfig &config, const BenchTimes &times,
               BenchReport &report) {
  std::printf(
      "{\"type\": \"total\", \"model\": %s, \"entry\": %s, \"target\": %s, "
      "\"batch\": %lld, \"seq\": %lld, \"threads\": %d, \"repeat\": %lld, "
      "\"warmup\": %lld, \"median_ms\": %.6f, \"min_ms\": %.6f, "
      "\"max_ms\": %.6f, \"kernel_median_sum_ms\": %.6f, "
      "\"runs_per_s\": %.6f}\n",
      jsonString(forwardPlan.model).c_str(),
      jsonString(config.entryName).c_str(),
      jsonString(forwardPlan.target).c_str(),
      static_cast<long long>(config.batch), static_cast<long long>(config.seq),
      config.threads, static_cast<long long>(times.repeat),
      static_cast<long long>(config.warmup), report.total.median,
      report.total.min, report.total.max, report.kernelSum,
      report.runsPerSecond);
  if (report.machine.threads > 0)
    std::printf("{\"type\": \"machine\", \"threads\": %d, "
                "\"read_bytes_per_s\": %.6e, \"f32_ops_per_s\": %.6e, "
                "\"f32_probe\": %s, \"int8_ops_per_s\": %.6e, "
                "\"int8_probe\": %s}\n",
                report.machine.threads, report.machine.roof.readBytesPerSecond,
                report.machine.roof.f32OpsPerSecond,
                jsonString(report.machine.f32Probe).c_str(),
                report.machine.roof.int8OpsPerSecond,
                jsonString(report.machine.int8Probe).c_str());
  for (std::size_t s = 0; s < report.steps.size(); ++s) {
    const PlanStep &step = timed.steps[s];
    std::string roof;
    if (s < report.roof.size() && report.roof[s].fraction > 0)
      roof = fmt::format(", \"ops\": {:.6e}, \"bytes\": {:.6e}, "
                         "\"roof_fraction\": {:.6f}, \"roof\": \"{}\"",
                         report.work[s]->ops, report.work[s]->bytes,
                         report.roof[s].fraction,
                         report.roof[s].memoryBound ? "memory" : "peak");
    std::printf("{\"type\": \"step\", \"index\": %zu, \"kernel\": %s, "
                "\"op\": %s, \"loc\": %s, \"dims\": [%s], "
                "\"median_ms\": %.6f, \"min_ms\": %.6f, \"max_ms\": %.6f%s}\n",
                s, jsonString(step.kernel).c_str(),
                jsonString(step.op).c_str(), jsonString(step.loc).c_str(),
                argShapes(timed, step, times.bound, ", ", ", ").c_str(),
                report.steps[s].median, report.steps[s].min,
                report.steps[s].max, roof.c_str());
  }
  for (const std::string &op : report.opOrder)
    std::printf("{\"type\": \"op\", \"op\": %s, \"steps\": %d, "
                "\"median_sum_ms\": %.6f}\n",
                jsonString(op).c_str(), report.perOp[op].first,
                report.perOp[op].second);
}

/// loc("dir/model.tfm":8:5) -> model.tfm:8:5, at most 24 characters.
std::string shortLoc(std::string loc) {
  if (loc.rfind("loc(", 0) == 0 && loc.back() == ')')
    loc = loc.substr(4, loc.size() - 5);
  loc.erase(std::remove(loc.begin(), loc.end(), '"'), loc.end());
  if (std::size_t slash = loc.rfind('/'); slash != std::string::npos)
    loc = loc.substr(slash + 1);
  if (loc.size() > 24)
    loc = "..." + loc.substr(loc.size() - 21);
  return loc;
}

void printTable(const Plan &forwardPlan, const Plan &timed,
                const BenchConfig &config, const BenchTimes &times,
                BenchReport &report) {
  std::printf("bench: model %s, entry %s, %s, %s, %lld runs after %lld "
              "warm-up\n",
              forwardPlan.model.c_str(), config.entryName.c_str(),
              times.shape.c_str(),
              config.threads ? fmt::format("{} threads", config.threads).c_str()
                             : "default threads",
              static_cast<long long>(times.repeat),
              static_cast<long long>(config.warmup));
  std::printf("%s: median %.3f ms, min %.3f, max %.3f (kernels: %.3f ms)\n",
              config.entryName.c_str(), report.total.median, report.total.min,
              report.total.max, report.kernelSum);
  if (config.decode)
    std::printf("decode: %.1f tokens/s\n", report.runsPerSecond);
  const MachineProbe &machine = report.machine;
  if (machine.threads > 0)
    std::printf("machine (measured after the runs, %d thread%s): read %.1f "
                "GB/s, f32 %.0f GFLOP/s (%s)%s\n",
                machine.threads, machine.threads == 1 ? "" : "s",
                machine.roof.readBytesPerSecond / 1e9,
                machine.roof.f32OpsPerSecond / 1e9, machine.f32Probe.c_str(),
                machine.int8Probe.empty()
                    ? ""
                    : fmt::format(", int8 {:.0f} GOP/s ({})",
                                  machine.roof.int8OpsPerSecond / 1e9,
                                  machine.int8Probe)
                          .c_str());
  std::printf("\n%4s  %-22s %10s %10s %10s  %-9s %-24s %s\n", "step", "op",
              "median ms", "min", "max", "roof", "loc",
              "dims (innermost first)");
  for (std::size_t s = 0; s < report.steps.size(); ++s) {
    const PlanStep &step = timed.steps[s];
    std::printf("%4zu  %-22s %10.3f %10.3f %10.3f  %-9s %-24s %s\n", s + 1,
                step.op.empty() ? "?" : step.op.c_str(),
                report.steps[s].median, report.steps[s].min,
                report.steps[s].max, roofText(report, s).c_str(),
                shortLoc(step.loc).c_str(),
                argShapes(timed, step, times.bound, ",", " ").c_str());
  }
  std::printf("\n%-22s %6s %14s %7s\n", "op", "steps", "sum of medians",
              "share");
  for (const std::string &op : report.opOrder)
    std::printf("%-22s %6d %11.3f ms %6.1f%%\n", op.c_str(),
                report.perOp[op].first, report.perOp[op].second,
                report.kernelSum > 0
                    ? 100.0 * report.perOp[op].second / report.kernelSum
                    : 0.0);
}

} // namespace

int benchCommand(int argc, char **argv) {
  Options options("bench",
                  {"--weights", "--seq", "--batch", "--repeat", "--warmup",
                   "--threads", "--entry"},
                  argc, argv, 2, {"--json"});
  if (options.helpRequested()) {
    printUsage(stdout);
    return 0;
  }
  const Plan &forwardPlan = requirePlan();
  const BenchConfig config = parseConfig(options, forwardPlan);

  std::unique_ptr<Model> model = loadModel(weightsPath(options));
  applyThreads(options);
  const Plan *timed = model->entry(config.entryName);
  if (!timed)
    fail(fmt::format("model '{}' has no entry point '{}'{}", forwardPlan.model,
                     config.entryName,
                     config.entryName == "forward"
                         ? ""
                         : " (it has no decoder, or its masks have no "
                           "decode step)"));

  BenchRunner runner(*model, config);
  BenchTimes times = config.decode   ? runner.timeDecode(*timed)
                     : config.extend ? runner.timeExtend(*timed)
                                     : runner.timeWhole(*timed);
  BenchReport report = summarizeTimes(*timed, times);
  addRoofline(*timed, times, config.threads, report);
  if (config.json)
    printJson(forwardPlan, *timed, config, times, report);
  else
    printTable(forwardPlan, *timed, config, times, report);
  return 0;
}

} // namespace tfmc::runtime::cli
